// Where a dump's loader (psql or pg_restore, connected as the restore's loader role:
// restore-role.ts) runs: a one-off container of the database's own image (the same binaries
// as the server) with no network at all, its only way out the database's unix socket (the
// environment's socket volume, read-only), the dump on its stdin, as nobody, with no
// capabilities, no-new-privileges and a read-only root file system; removed afterwards. A
// loader that ran something (a psql bug, a meta-command no guard saw) reaches neither the ERP
// nor anything else the environment's network reaches. Local connections are trusted by the
// image (initdb's default for the socket), so no password is needed or passed.
//
// A database container made before it had a socket volume keeps the older way: docker exec
// in the database container, as nobody, the same role; a deploy moves it over when it can
// recreate it without cutting off a serving ERP (postgres.ts, recreateWithSocket).
import { randomBytes } from "node:crypto";
import { Writable, type Readable } from "node:stream";
import type { DockerClient } from "../../docker/docker-client.ts";
import { ROLE_LABEL } from "../../docker/labels.ts";
import type { ContainerDetails, ContainerSpec } from "../../docker/workloads.ts";
import { CommandError } from "../runner/handler-types.ts";
import { POSTGRES_SOCKET_DIR } from "./environment-layout.ts";
import { LOADER_OS_USER } from "./restore-role.ts";

export interface LoaderResult {
  exitCode: number;
  /** Its last lines of stderr (its errors); stdout (query results) is dropped. */
  stderr: string;
}

/** How many of the loader's last stderr lines are kept for its error. */
const TAIL_LINES = 40;

/** The named volume a database container has on its socket directory; null for one made before. */
export function socketVolumeOf(db: Pick<ContainerDetails, "mounts">): string | null {
  return db.mounts.find((m) => m.destination === POSTGRES_SOCKET_DIR && m.name !== null)?.name ?? null;
}

/** The one-off container that runs `cmd` against the database `db` through its socket volume. */
export function loaderSpec(db: Pick<ContainerDetails, "name" | "imageId" | "labels" | "mounts">, socketVolume: string, cmd: string[]): ContainerSpec {
  const [program, ...args] = cmd;
  if (program === undefined) throw new Error("a loader needs a command");
  return {
    name: `${db.name}-load-${randomBytes(4).toString("hex")}`,
    image: db.imageId,
    // The database's labels (its environment, the agent's extras), as a loader.
    labels: { ...db.labels, [ROLE_LABEL]: "db-loader" },
    // The program itself, not the image's entrypoint script: nothing runs but it.
    entrypoint: [program],
    cmd: args,
    env: [`PGHOST=${POSTGRES_SOCKET_DIR}`],
    network: "none",
    binds: [`${socketVolume}:${POSTGRES_SOCKET_DIR}:ro`],
    // The image's VOLUMEs (the database's other mount points) would each get an anonymous
    // volume, unlabelled (a crash leaves it behind): an empty read-only tmpfs instead.
    tmpfs: Object.fromEntries(db.mounts.filter((m) => m.destination !== POSTGRES_SOCKET_DIR).map((m) => [m.destination, "ro,size=16k"])),
    user: LOADER_OS_USER,
    capDrop: ["ALL"],
    noNewPrivileges: true,
    readOnlyRootfs: true,
    restartPolicy: "no",
  };
}

/** Runs the loader `cmd` with `stdin` against the database in `dbContainerId`; see the header. */
export async function runLoader(
  docker: DockerClient,
  dbContainerId: string,
  cmd: string[],
  options: { stdin: Readable; deadlineMs: number },
): Promise<LoaderResult> {
  const db = await docker.inspectContainer(dbContainerId);
  if (db === null) throw new CommandError("database_failed", `the database container ${dbContainerId} is gone`);
  const volume = socketVolumeOf(db);
  if (volume === null) {
    const result = await docker.exec(dbContainerId, cmd, { ...options, user: LOADER_OS_USER });
    return { exitCode: result.exitCode, stderr: result.stderr };
  }
  const run = await docker.runToCompletion(loaderSpec(db, volume, cmd), {
    deadlineMs: options.deadlineMs,
    stdin: options.stdin,
    stdout: discard(),
    tailLines: TAIL_LINES,
  });
  const stderr = run.tail.join("\n");
  if (run.killed) {
    throw new CommandError("restore_failed", `${cmd[0] ?? "the loader"} did not finish within ${Math.round(options.deadlineMs / 1000)} s: ${stderr.trim() || "no output"}`);
  }
  return { exitCode: run.exitCode, stderr };
}

function discard(): Writable {
  return new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });
}
