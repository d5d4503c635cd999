// The environment's PostgreSQL: a container on the environment's network with a named
// volume that outlives every redeploy, a password made once and kept in the state dir
// (0600, never sent anywhere), readiness (which also recovers an interrupted restore, see
// database-swap.ts), and the dump used by backups. Every
// command runs as an argument vector through docker exec, on the server's local socket,
// where the image trusts local connections: no password on any command line. The socket's
// directory is a volume of its own (layout.dbSocketVolume), so a dump's loader reaches the
// server through it from a container with no network (loader-container.ts).
import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import type { Writable } from "node:stream";
import { sleep, type Clock } from "../../clock.ts";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentFilter, environmentLabels, isEnvironmentObject } from "../../docker/labels.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE, STATE_DIR_MODE } from "../../state/state-dir.ts";
import { ERP_DB_NAME, ERP_DB_USER, POSTGRES_SOCKET_DIR, type EnvironmentLayout } from "./environment-layout.ts";
import { recoverInterruptedRestore } from "./database-swap.ts";
import { ensureImage, findErpContainer } from "./erp-container.ts";
import { socketVolumeOf } from "./loader-container.ts";
import { DEFAULT_TIMING } from "../runner/executor-deps.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";

/** /dev/shm of the environment's PostgreSQL. */
export const POSTGRES_SHM_BYTES = 256 * 1024 * 1024;

export interface PostgresReady {
  containerId: string;
  /** True when the volume was made now: the database is new. */
  volumeCreated: boolean;
}

export interface EnsurePostgresOptions {
  image: string;
  extraLabels: Readonly<Record<string, string>>;
  readyTimeoutMs: number;
  clock: Clock;
}

/** Creates (or reuses, or starts) the environment's PostgreSQL and waits until it accepts connections. */
export async function ensurePostgres(
  docker: DockerClient,
  layout: EnvironmentLayout,
  scope: Pick<StepScope, "log" | "signal">,
  options: EnsurePostgresOptions,
): Promise<PostgresReady> {
  const volume = await docker.findVolume(layout.dbVolume);
  if (volume !== null && !isEnvironmentObject(volume.labels, layout.environmentId)) {
    throw new CommandError("name_conflict", `volume ${layout.dbVolume} exists but is not this environment's: Berth leaves it alone`);
  }
  const password = await dbPassword(layout, volume !== null);
  let volumeCreated = false;
  if (volume === null) {
    await docker.createVolume(layout.dbVolume, environmentLabels(layout.environmentId, "db-volume", options.extraLabels));
    volumeCreated = true;
    scope.log("info", `Created database volume ${layout.dbVolume}`);
  } else {
    scope.log("info", `Reusing database volume ${layout.dbVolume}: existing data is kept`);
  }

  let container = await docker.inspectContainer(layout.dbContainer);
  if (container !== null && !isEnvironmentObject(container.labels, layout.environmentId)) {
    throw new CommandError("name_conflict", `container ${layout.dbContainer} exists but is not this environment's: Berth leaves it alone`);
  }
  let image = options.image;
  if (container !== null && socketVolumeOf(container) === null && (await recreateWithSocket(docker, layout, container.id, scope))) {
    // The image it ran: a major version change needs pg_upgrade (below).
    image = container.image;
    container = null;
  }
  if (container === null) {
    await ensureImage(docker, image, scope);
    await ensureSocketVolume(docker, layout, options.extraLabels);
    const id = await docker.createContainer({
      name: layout.dbContainer,
      image,
      labels: environmentLabels(layout.environmentId, "db", options.extraLabels),
      env: [`POSTGRES_USER=${ERP_DB_USER}`, `POSTGRES_PASSWORD=${password}`, "POSTGRES_DB=postgres"],
      network: layout.network,
      binds: [`${layout.dbVolume}:/var/lib/postgresql/data`, `${layout.dbSocketVolume}:${POSTGRES_SOCKET_DIR}`],
      restartPolicy: "unless-stopped",
      // Parallel index builds and vacuums of big tables need more than Docker's 64 MB of
      // /dev/shm ("could not resize shared memory segment"), as a 1 GB table showed.
      shmSizeBytes: POSTGRES_SHM_BYTES,
    });
    scope.log("info", `Created PostgreSQL container ${layout.dbContainer} from ${image}`);
    container = await docker.inspectContainer(id);
    if (container === null) throw new CommandError("docker_error", `container ${layout.dbContainer} vanished after its creation`);
  }
  if (container.image !== options.image) {
    // A major version change needs pg_upgrade; swapping the image would not start on the old data.
    scope.log(
      "warning",
      `PostgreSQL runs ${container.image}, not ${options.image}: major upgrades are not automatic, keeping ${container.image}`,
    );
  }
  if (!container.running) {
    await docker.startContainer(container.id);
    scope.log("info", `Started PostgreSQL container ${layout.dbContainer}`);
  }
  await waitForPostgres(docker, container.id, { ...scope, timeoutMs: options.readyTimeoutMs, clock: options.clock });
  if (!volumeCreated) await recoverRestore(docker, container.id, layout, scope);
  return { containerId: container.id, volumeCreated };
}

/**
 * A database container made before it had a socket volume loads dumps by docker exec, on the
 * environment's network (loader-container.ts). It is recreated (the data volume kept) when
 * that cuts off nothing: no ERP of the environment runs. A serving ERP is not cut off for it:
 * a later deploy that finds the ERP stopped recreates it. True when removed.
 */
async function recreateWithSocket(
  docker: DockerClient,
  layout: EnvironmentLayout,
  containerId: string,
  scope: Pick<StepScope, "log">,
): Promise<boolean> {
  const erp = await findErpContainer(docker, layout);
  if (erp !== null && erp.state === "running") {
    scope.log("info", `PostgreSQL container ${layout.dbContainer} predates its socket volume: dumps load in it, on its network, until a deploy finds the ERP stopped and recreates it`);
    return false;
  }
  await docker.stopContainer(containerId, DEFAULT_TIMING.stopGraceSeconds);
  await docker.removeContainer(containerId);
  scope.log("info", `Removed PostgreSQL container ${layout.dbContainer}, made before its socket volume, to recreate it on the same data volume`);
  return true;
}

/**
 * The volume the server's socket lives in: a named volume rather than a folder of the state
 * dir, because Docker fills a new one with the image's own directory (its owner and its
 * 3777 mode, whatever the image), it is reachable only through Docker (no host path where
 * another local user could connect as the superuser, whom local connections trust), and it
 * goes with the environment's other volumes on destroy.
 */
async function ensureSocketVolume(docker: DockerClient, layout: EnvironmentLayout, extraLabels: Readonly<Record<string, string>>): Promise<void> {
  const volume = await docker.findVolume(layout.dbSocketVolume);
  if (volume === null) {
    await docker.createVolume(layout.dbSocketVolume, environmentLabels(layout.environmentId, "db-socket", extraLabels));
  } else if (!isEnvironmentObject(volume.labels, layout.environmentId)) {
    throw new CommandError("name_conflict", `volume ${layout.dbSocketVolume} exists but is not this environment's: Berth leaves it alone`);
  }
}

/** The environment's PostgreSQL container, started and ready; not_deployed when there is none. */
export async function runningPostgres(
  docker: DockerClient,
  layout: EnvironmentLayout,
  scope: Pick<StepScope, "log" | "signal">,
  options: { readyTimeoutMs: number; clock: Clock },
): Promise<string> {
  const [db] = await docker.listContainers(environmentFilter(layout.environmentId, "db"));
  if (db === undefined) {
    throw new CommandError("not_deployed", `environment ${layout.environmentId} has no database container on this server`);
  }
  if (db.state !== "running") {
    await docker.startContainer(db.id);
    scope.log("info", `Started PostgreSQL container ${db.name}`);
  }
  await waitForPostgres(docker, db.id, { signal: scope.signal, timeoutMs: options.readyTimeoutMs, clock: options.clock });
  await recoverRestore(docker, db.id, layout, scope);
  return db.id;
}

/**
 * Every operation that makes the database ready first finishes or rolls back a restore the
 * agent was interrupted in (database-swap.ts), so none of them runs without its database.
 */
async function recoverRestore(
  docker: DockerClient,
  dbContainerId: string,
  layout: EnvironmentLayout,
  scope: Pick<StepScope, "log">,
): Promise<void> {
  await recoverInterruptedRestore(docker, dbContainerId, layout, scope.log, {
    async stopErp() {
      const erp = await findErpContainer(docker, layout);
      if (erp === null || erp.state !== "running") return async () => undefined;
      await docker.stopContainer(erp.id, DEFAULT_TIMING.stopGraceSeconds);
      scope.log("warning", `Stopped ERP container ${erp.name} to roll back an interrupted restore`);
      return async () => {
        await docker.startContainer(erp.id);
        scope.log("info", `Started ERP container ${erp.name} again`);
      };
    },
  });
}

/** Polls pg_isready over TCP (during first-start set-up the server listens on its socket only). */
export async function waitForPostgres(
  docker: DockerClient,
  containerId: string,
  options: { signal: AbortSignal; timeoutMs: number; clock: Clock },
): Promise<void> {
  const deadline = options.clock.now().getTime() + options.timeoutMs;
  while (true) {
    options.signal.throwIfAborted();
    const container = await docker.inspectContainer(containerId);
    if (container === null || !container.running) {
      const logs = container === null ? "" : await docker.containerLogs(containerId, 20).catch(() => "");
      throw new CommandError(
        "database_failed",
        `PostgreSQL stopped while starting (exit code ${container?.exitCode ?? "unknown"})${logs ? `:\n${logs.trim()}` : ""}`,
      );
    }
    const probe = await docker
      .exec(containerId, ["pg_isready", "-q", "-h", "127.0.0.1", "-U", ERP_DB_USER], { deadlineMs: 10_000 })
      .catch(() => ({ exitCode: -1 }));
    if (probe.exitCode === 0) return;
    if (options.clock.now().getTime() > deadline) {
      throw new CommandError("database_not_ready", `PostgreSQL did not accept connections within ${options.timeoutMs / 1000} s`);
    }
    await sleep(options.clock, 500, options.signal);
  }
}

/** pg_dump in custom format, streamed into `sink`. */
export async function dumpDatabase(docker: DockerClient, dbContainerId: string, sink: Writable, deadlineMs: number): Promise<void> {
  const result = await docker.exec(
    dbContainerId,
    ["pg_dump", "-U", ERP_DB_USER, "--format=custom", "--dbname", ERP_DB_NAME],
    { deadlineMs, stdout: sink },
  );
  if (result.exitCode !== 0) {
    throw new CommandError("backup_failed", `pg_dump failed (exit code ${result.exitCode}): ${result.stderr.trim()}`);
  }
}

/**
 * The environment's database password: made on the first deploy, then read back. A volume
 * without its password file means the state dir was lost; a new password would not open
 * the old database, so that is an error, not a fresh start.
 */
async function dbPassword(layout: EnvironmentLayout, volumeExists: boolean): Promise<string> {
  try {
    const stored = (await readFile(layout.dbPasswordFile, "utf8")).trim();
    if (stored !== "") return stored;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (volumeExists) {
    throw new CommandError(
      "db_password_missing",
      `the database volume ${layout.dbVolume} exists but its password file ${layout.dbPasswordFile} is missing`,
    );
  }
  await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
  const password = randomBytes(24).toString("base64url");
  writeFileAtomic(layout.dbPasswordFile, `${password}\n`, SECRET_FILE_MODE);
  return password;
}
