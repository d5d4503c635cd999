// A copy taken now of another environment on this server (RestoreParams.live_source, the
// control plane's copy-from with backup "fresh"), read without stopping it and never written:
//
//   database    a consistent pg_dump (one snapshot) of its live database, streamed straight
//               into pg_restore of the target's new database: no file in between, and no
//               compression (the bytes never leave the server, so zlib would only cost time).
//   file store  its data dir's filestore/, copied by name into the target's new data dir.
//               Odoo writes each attachment's file once, under its checksum, and only ever
//               unlinks it, so a file is hard-linked when it already belongs to the target
//               image's user (same filesystem): no byte is copied and no owner changed;
//               otherwise it is copied and given to that user. The source's sessions/ are not
//               copied: they are its users' logins.
//
// Only the source's PostgreSQL is needed, running: it is not started, and an interrupted
// restore of the source is left for the source's own next operation to recover.
import { copyFile, link, lchown, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentFilter } from "../../docker/labels.ts";
import { ERP_DB_NAME, ERP_DB_USER, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { restoreDump, type RestoreNames } from "../environment/database-swap.ts";
import { loaderSpec, socketVolumeOf } from "../environment/loader-container.ts";
import { withLoaderRole } from "../environment/restore-role.ts";
import type { ContainerDetails } from "../../docker/workloads.ts";
import type { ErpUser } from "../environment/erp-image-user.ts";
import { CommandError } from "../runner/handler-types.ts";

/** The source environment's running PostgreSQL container; copy_source_unavailable when it has none running. */
export async function liveSourceDatabase(docker: DockerClient, source: EnvironmentLayout): Promise<string> {
  const [db] = await docker.listContainers(environmentFilter(source.environmentId, "db"));
  if (db === undefined || db.state !== "running") {
    throw new CommandError(
      "copy_source_unavailable",
      `environment ${source.environmentId} has no running database on this server (${db === undefined ? "none" : db.state}): nothing was copied`,
    );
  }
  return db.id;
}

/**
 * pg_dump of the source's live database (one snapshot) piped into pg_restore of `incomingDb`
 * in the target's PostgreSQL (one transaction, as the restore's loader role: no superuser).
 * Either failing fails both; the dump's error is the one told (it is why the load saw a cut
 * archive). When both databases have a socket volume the pipe runs inside one loader
 * container (pipedInLoader): the bytes never pass through the agent; else through it.
 */
export async function streamDatabase(
  docker: DockerClient,
  input: { sourceDb: string; targetDb: string; incomingDb: string; deadlineMs: number },
): Promise<"in one loader container" | "through the agent"> {
  const [source, target] = await Promise.all([docker.inspectContainer(input.sourceDb), docker.inspectContainer(input.targetDb)]);
  const sourceVolume = source === null ? null : socketVolumeOf(source);
  const targetVolume = target === null ? null : socketVolumeOf(target);
  if (target !== null && sourceVolume !== null && targetVolume !== null) {
    await pipedInLoader(docker, { target, targetVolume, sourceVolume, incomingDb: input.incomingDb, deadlineMs: input.deadlineMs });
    return "in one loader container";
  }
  await pipedThroughAgent(docker, input);
  return "through the agent";
}

/** Where the loader reaches the source's socket (read-only, as the target's). */
const SOURCE_SOCKET_DIR = "/run/berth-copy-source";
const EXIT_MARK = /^berth-exit (pg_dump|pg_restore) (\d+)$/;
/** A program killed by SIGPIPE, as sh reports it: pg_dump after pg_restore stopped reading. */
const SIGPIPE_STATUS = 128 + 13;
const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The pipe in one loader container of the target's database image (loader-container.ts: no
 * network, nobody, no capabilities, read-only root), which also gets the source's socket
 * volume read-only: its pg_dump reads the source as the image's trusted local superuser, as
 * `docker exec pg_dump` in the source's container does; its pg_restore writes as the loader
 * role. A custom-format archive runs nothing on the client, so the pipe carries data only.
 * sh reports each program's exit status on stderr (no pipefail in every image's sh).
 */
async function pipedInLoader(
  docker: DockerClient,
  input: { target: ContainerDetails; targetVolume: string; sourceVolume: string; incomingDb: string; deadlineMs: number },
): Promise<void> {
  await withLoaderRole(docker, input.target.id, input.incomingDb, async (role) => {
    const script =
      `{ pg_dump -h ${shQuote(SOURCE_SOCKET_DIR)} -U ${shQuote(ERP_DB_USER)} --format=custom --compress=0 --dbname ${shQuote(ERP_DB_NAME)}; echo "berth-exit pg_dump $?" >&2; }` +
      ` | pg_restore -U ${shQuote(role)} --no-owner --single-transaction --exit-on-error --dbname ${shQuote(input.incomingDb)}; echo "berth-exit pg_restore $?" >&2`;
    const spec = loaderSpec(input.target, input.targetVolume, ["sh", "-c", script]);
    spec.binds = [...(spec.binds ?? []), `${input.sourceVolume}:${SOURCE_SOCKET_DIR}:ro`];
    const run = await docker.runToCompletion(spec, { deadlineMs: input.deadlineMs, tailLines: 200 });
    const status: Record<string, number> = {};
    const lines: string[] = [];
    for (const line of run.tail) {
      const m = EXIT_MARK.exec(line);
      if (m) status[m[1]!] = Number(m[2]);
      else lines.push(line);
    }
    const said = lines.join("\n").trim();
    if (run.killed) throw new CommandError("restore_failed", `the copy of the database did not finish within ${Math.round(input.deadlineMs / 1000)} s: ${said || "no output"}`);
    const dumped = status.pg_dump;
    const loaded = status.pg_restore;
    if (dumped === undefined || loaded === undefined) throw new CommandError("restore_failed", `the copy of the database ended without finishing (exit code ${run.exitCode}): ${said || "no output"}`);
    if (dumped !== 0 && !(dumped === SIGPIPE_STATUS && loaded !== 0)) {
      throw new CommandError("copy_dump_failed", `pg_dump of the source failed (exit code ${dumped}): ${said}`);
    }
    if (loaded !== 0) throw new CommandError("restore_failed", `pg_restore failed (exit code ${loaded}): ${said}`);
  });
}

/** The pipe through the agent: `docker exec pg_dump` in the source's container into the loader (restoreDump). */
async function pipedThroughAgent(docker: DockerClient, input: { sourceDb: string; targetDb: string; incomingDb: string; deadlineMs: number }): Promise<void> {
  const pipe = new PassThrough({ highWaterMark: 1 << 20 });
  // Its errors are told through the two promises below, not as a stream event nobody awaits.
  pipe.on("error", () => undefined);
  const dumping = docker
    .exec(input.sourceDb, ["pg_dump", "-U", ERP_DB_USER, "--format=custom", "--compress=0", "--dbname", ERP_DB_NAME], { deadlineMs: input.deadlineMs, stdout: pipe })
    .then((result) => {
      if (result.exitCode !== 0) throw new CommandError("copy_dump_failed", `pg_dump of the source failed (exit code ${result.exitCode}): ${result.stderr.trim()}`);
    });
  // A failed dump ends the load's input with its error; a finished (or failed) load stops the dump.
  dumping.catch((error: unknown) => pipe.destroy(error instanceof Error ? error : new Error(String(error))));
  const loading = restoreDump(docker, input.targetDb, input.incomingDb, pipe, input.deadlineMs).finally(() => pipe.destroy());
  const [dumped, loaded] = await Promise.allSettled([dumping, loading]);
  if (dumped.status === "rejected") throw dumped.reason;
  if (loaded.status === "rejected") throw loaded.reason;
}

export interface FileStoreCopy {
  files: number;
  linked: number;
  bytesCopied: number;
}

/**
 * Copies the source's filestore/ into the target's new data dir (names.incomingDir, created
 * here and given to `user`). Returns how many files were linked and copied.
 */
export async function copyFileStore(source: EnvironmentLayout, names: RestoreNames, user: ErpUser, signal: AbortSignal): Promise<FileStoreCopy> {
  const counts: FileStoreCopy = { files: 0, linked: 0, bytesCopied: 0 };
  const give = async (path: string) =>
    lchown(path, user.uid, user.gid).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EPERM") throw error;
    });
  await mkdir(names.incomingDir, { mode: 0o750 });
  await give(names.incomingDir);
  const from = join(source.dataDir, "filestore");
  if (!(await lstat(from).then((s) => s.isDirectory(), () => false))) return counts;

  const walk = async (src: string, dest: string): Promise<void> => {
    signal.throwIfAborted();
    await mkdir(dest, { mode: 0o750 });
    await give(dest);
    const entries = await readdir(src, { withFileTypes: true });
    // A few files at a time: enough to keep the disk busy, not a descriptor per file.
    for (let i = 0; i < entries.length; i += 16) {
      await Promise.all(
        entries.slice(i, i + 16).map(async (entry) => {
          const s = join(src, entry.name);
          const d = join(dest, entry.name);
          if (entry.isDirectory()) return walk(s, d);
          if (!entry.isFile()) return; // a link or a device has no place in a file store
          counts.files++;
          const st = await lstat(s);
          if (st.uid === user.uid && st.gid === user.gid) {
            const linked = await link(s, d).then(
              () => true,
              (error: NodeJS.ErrnoException) => {
                if (error.code === "EXDEV" || error.code === "EPERM" || error.code === "EMLINK") return false;
                throw error;
              },
            );
            if (linked) {
              counts.linked++;
              return;
            }
          }
          await copyFile(s, d);
          await give(d);
          counts.bytesCopied += st.size;
        }),
      );
    }
  };
  await walk(from, join(names.incomingDir, "filestore"));
  return counts;
}
