// The baseline: the Docker operations of the agent's deploy (apps/agent/src/executor/deploy/deploy.ts
// and the modules it calls) done directly with dockerode in this process, with no control
// plane, protocol, journal, events or step runner. Each engine call the agent makes for a
// fresh environment without a Git repository or a domain is made here too, in the same
// order and with the same options, including its look-ups (the inspect before a create,
// the ownership inspect before start and exec): what remains between the two variants is
// what the product adds around the Docker work. The polling intervals are the agent's
// defaults (pg_isready every 500 ms, /web/login every 1 s), so both variants see the same
// quantisation. Step ids are the agent's, so the two can be printed side by side.
import { randomBytes } from "node:crypto";
import { chown, mkdir, readFile, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Duplex } from "node:stream";
import { finished } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type Docker from "dockerode";
// The same odoo.conf and sizing as the agent: its pure functions, not a copy of them.
import { renderOdooConf, sizeErp } from "../../../apps/agent/src/executor/deploy/erp-config.ts";
// The same one-off run of the image as the agent's: its command, mounts and environment.
import { erpCommand } from "../../../apps/agent/src/executor/deploy/erp-modules.ts";
import { erpPasswordHash } from "../../../apps/agent/src/executor/deploy/erp-login.ts";
import { addonReposDir, ADDON_REPOS_MOUNT } from "../../../apps/agent/src/executor/deploy/addon-repositories.ts";
import { erpEnvironment, pythonLayerBind, pythonLayerDir } from "../../../apps/agent/src/executor/deploy/python-layer.ts";
import { writeFileAtomic } from "../../../apps/agent/src/state/atomic-write.ts";

/** Constants of apps/agent/src/executor/environment/environment-layout.ts and state/state-dir.ts. */
const ERP_DB_NAME = "odoo";
const ERP_DB_USER = "odoo";
const ERP_DB_PORT = 5432;
/** berth-test/erp:17.0's user (the agent reads it from the image, once per image id: erp-image-user.ts). */
const ERP_UID = 101;
const ERP_HTTP_PORT = "8069/tcp";
const STATE_DIR_MODE = 0o700;
const SECRET_FILE_MODE = 0o600;
/** DEFAULT_TIMING in executor-deps.ts. */
const PG_POLL_MS = 500;
const HEALTH_INTERVAL_MS = 1_000;
const DB_READY_TIMEOUT_MS = 90_000;
const HEALTH_TIMEOUT_MS = 30_000;

export interface DirectDeployInput {
  stateDir: string;
  environmentId: string;
  deploymentId: string;
  erpVersion: string;
  image: string;
  dbImage: string;
  resources: { cpu_cores: number; ram_mb: number; disk_gb: number; workers: number };
  /** Checked before every engine call: the benchmark's clean-up stops a run in progress. */
  signal?: AbortSignal;
}

export interface Phase {
  step: string;
  ms: number;
}

export interface DirectDeployResult {
  totalMs: number;
  phases: Phase[];
  hostPort: number;
  /** Engine calls made, for the report. */
  dockerCalls: number;
  pgProbes: number;
  /** Inside the long steps, as the agent's log lines split them (see full.ts). */
  inside: Inside;
}

/** The parts of the three long steps; the agent logs a line at each boundary. */
export interface Inside {
  /** docker create of PostgreSQL (vfs copies the image). */
  pg_create_ms: number;
  /** docker start of PostgreSQL. */
  pg_start_ms: number;
  /** Started -> pg_isready answers (initdb on first start). */
  pg_ready_ms: number;
  /** docker create of the ERP. */
  erp_create_ms: number;
  /** docker start of the ERP and the inspect for its port. */
  erp_start_ms: number;
  health_attempts: number;
}

const isNotFound = (error: unknown) => (error as { statusCode?: number } | null)?.statusCode === 404;

export async function directDeploy(docker: Docker, input: DirectDeployInput): Promise<DirectDeployResult> {
  const id = input.environmentId;
  const prefix = `berth-${id}`;
  const layout = {
    network: prefix,
    dbContainer: `${prefix}-db`,
    dbVolume: `${prefix}-pgdata`,
    erpContainer: `${prefix}-erp`,
    dir: path.join(input.stateDir, "environments", id),
    dbPasswordFile: path.join(input.stateDir, "environments", id, "db-password"),
    configFile: path.join(input.stateDir, "environments", id, "odoo.conf"),
    dataDir: path.join(input.stateDir, "environments", id, "data"),
    addonsDir: path.join(input.stateDir, "environments", id, "addons"),
    proxyFile: path.join(input.stateDir, "proxy", `${id}.yml`),
  };
  const labels = (role: string, extra: Record<string, string> = {}) => ({
    ...extra,
    "berth.managed": "true",
    "berth.environment_id": id,
    "berth.role": role,
  });
  let dockerCalls = 0;
  const call = <T>(work: () => Promise<T>): Promise<T> => {
    input.signal?.throwIfAborted();
    dockerCalls += 1;
    return work();
  };
  const inspect = async (idOrName: string): Promise<Docker.ContainerInspectInfo | null> => {
    try {
      return await call(() => docker.getContainer(idOrName).inspect());
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  };
  /** workloads.ts inspects a container (ownership) before it starts it or enters it. */
  const owned = async (idOrName: string) => {
    const info = await inspect(idOrName);
    if (info === null || info.Config.Labels?.["berth.managed"] !== "true") throw new Error(`container ${idOrName} is not Berth's`);
    return info;
  };

  const phases: Phase[] = [];
  const started = performance.now();
  let mark = started;
  const done = (step: string) => {
    const now = performance.now();
    phases.push({ step, ms: now - mark });
    mark = now;
  };

  // initializing
  const sizing = sizeErp(input.resources);
  await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
  await mkdir(layout.dataDir, { recursive: true, mode: 0o750 });
  await chown(layout.dataDir, ERP_UID, ERP_UID);
  await mkdir(pythonLayerDir(layout.dir), { recursive: true, mode: 0o755 });
  await chown(pythonLayerDir(layout.dir), ERP_UID, ERP_UID);
  await mkdir(addonReposDir(layout.dir), { recursive: true, mode: 0o755 });
  done("initializing");

  // connecting
  await call(() => docker.version());
  done("connecting");

  // creating_network: look it up, then create it
  try {
    await call(() => docker.getNetwork(layout.network).inspect());
    throw new Error(`network ${layout.network} already exists`);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  await call(() => docker.createNetwork({ Name: layout.network, Driver: "bridge", CheckDuplicate: true, Labels: labels("network") }));
  done("creating_network");
  done("configuring_dns");

  // creating_postgres: volume, password, container, start, readiness
  try {
    await call(() => docker.getVolume(layout.dbVolume).inspect());
    throw new Error(`volume ${layout.dbVolume} already exists`);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  await readFile(layout.dbPasswordFile, "utf8").then(
    () => {
      throw new Error(`${layout.dbPasswordFile} already exists`);
    },
    (error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    },
  );
  await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
  const password = randomBytes(24).toString("base64url");
  writeFileAtomic(layout.dbPasswordFile, `${password}\n`, SECRET_FILE_MODE);
  await call(() => docker.createVolume({ Name: layout.dbVolume, Labels: labels("db-volume") }));
  if ((await inspect(layout.dbContainer)) !== null) throw new Error(`container ${layout.dbContainer} already exists`);
  await call(() => docker.getImage(input.dbImage).inspect());
  const pgCreating = performance.now();
  const db = await call(() =>
    docker.createContainer({
      name: layout.dbContainer,
      Image: input.dbImage,
      Labels: labels("db"),
      Env: [`POSTGRES_USER=${ERP_DB_USER}`, `POSTGRES_PASSWORD=${password}`, "POSTGRES_DB=postgres"],
      ExposedPorts: {},
      HostConfig: {
        NetworkMode: layout.network,
        Binds: [`${layout.dbVolume}:/var/lib/postgresql/data`],
        PortBindings: {},
        RestartPolicy: { Name: "unless-stopped" },
      },
    }),
  );
  const pgCreated = performance.now();
  await inspect(db.id);
  await owned(db.id);
  await call(() => docker.getContainer(db.id).start());
  const pgStarted = performance.now();
  let pgProbes = 0;
  const pgDeadline = Date.now() + DB_READY_TIMEOUT_MS;
  while (true) {
    const state = await inspect(db.id);
    if (state === null || !state.State.Running) throw new Error(`PostgreSQL stopped while starting (exit code ${state?.State.ExitCode})`);
    pgProbes += 1;
    const exitCode = await execExitCode(docker, await owned(db.id), ["pg_isready", "-q", "-h", "127.0.0.1", "-U", ERP_DB_USER], () => (dockerCalls += 1)).catch(() => -1);
    if (exitCode === 0) break;
    if (Date.now() > pgDeadline) throw new Error(`PostgreSQL did not accept connections within ${DB_READY_TIMEOUT_MS / 1000} s`);
    await sleep(PG_POLL_MS);
  }
  const pgReady = performance.now();
  done("creating_postgres");
  done("cloning_platform_repos");
  done("cloning_org_repos");

  // cloning_repo: no repository, an empty addons dir swapped in
  const fresh = `${layout.addonsDir}.new-${randomBytes(4).toString("hex")}`;
  await mkdir(fresh, { mode: 0o755 });
  await rename(fresh, layout.addonsDir);
  done("cloning_repo");

  // pulling_image: present locally
  await call(() => docker.getImage(input.image).inspect());
  done("pulling_image");

  // generating_config
  const dbPassword = (await readFile(layout.dbPasswordFile, "utf8")).trim();
  const conf = renderOdooConf({
    series: input.erpVersion,
    dbHost: layout.dbContainer,
    dbPort: ERP_DB_PORT,
    dbUser: ERP_DB_USER,
    dbPassword,
    dbName: ERP_DB_NAME,
    sizing,
    proxyMode: false,
  });
  writeFileAtomic(layout.configFile, conf, SECRET_FILE_MODE);
  await chown(layout.configFile, ERP_UID, ERP_UID);
  done("generating_config");

  // starting_container: a new database is initialised first (deploy.ts prepareDatabase:
  // is "odoo" there, a one-off `odoo -i base --stop-after-init` of the image with the
  // environment's mounts and limits, its modules read back), the administrator's password
  // is set (erp-login.ts), then look-ups, create, start, read the published port
  const binds = [
    `${layout.configFile}:/etc/odoo/odoo.conf:ro`,
    `${layout.dataDir}:/var/lib/odoo`,
    `${layout.addonsDir}:/mnt/extra-addons:ro`,
    `${addonReposDir(layout.dir)}:${ADDON_REPOS_MOUNT}:ro`,
    pythonLayerBind(layout.dir),
  ];
  const psql = async (database: string, sql: string) =>
    execExitCode(docker, await owned(db.id), ["psql", "-U", ERP_DB_USER, "-d", database, "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t", "-c", sql], () => (dockerCalls += 1));
  const readDbModules = async () => {
    await psql("postgres", `SELECT 1 FROM pg_database WHERE datname = '${ERP_DB_NAME}'`);
    await psql(ERP_DB_NAME, "SELECT to_regclass('public.ir_module_module') IS NOT NULL");
    await psql(ERP_DB_NAME, "SELECT json_build_object('name', name, 'state', state, 'latest_version', latest_version)::text FROM ir_module_module ORDER BY name");
  };
  // The first look finds no database (one query), so the second is the whole read.
  await psql("postgres", `SELECT 1 FROM pg_database WHERE datname = '${ERP_DB_NAME}'`);
  const init = await call(() =>
    docker.createContainer({
      name: `${layout.erpContainer}-run-${randomBytes(4).toString("hex")}`,
      Image: input.image,
      Labels: labels("erp-run", { "berth.deployment_id": input.deploymentId }),
      Env: erpEnvironment({}),
      Cmd: erpCommand({ series: input.erpVersion, init: ["base"], withoutDemo: true }),
      HostConfig: { NetworkMode: layout.network, Binds: binds, NanoCpus: sizing.nano_cpus, Memory: sizing.memory_bytes },
    }),
  );
  const output = (await call(() => init.attach({ stream: true, stdout: true, stderr: true, logs: true }))) as NodeJS.ReadableStream;
  output.resume();
  await call(() => init.start());
  const { StatusCode: initExit } = (await call(() => init.wait())) as { StatusCode: number };
  await call(() => init.remove({ force: true, v: true }));
  if (initExit !== 0) throw new Error(`odoo -i base exited ${initExit}`);
  await readDbModules();
  const hash = await erpPasswordHash(randomBytes(12).toString("base64url"));
  await psql(ERP_DB_NAME, "SELECT to_regclass('public.res_users') IS NOT NULL");
  await psql(ERP_DB_NAME, `UPDATE res_users SET password = '${hash}' WHERE id = 2 RETURNING login`);
  if ((await inspect(layout.erpContainer)) !== null) throw new Error(`container ${layout.erpContainer} already exists`);
  await call(() =>
    docker.listContainers({ all: true, filters: { label: ["berth.managed=true", `berth.environment_id=${id}`, "berth.role=erp"] } }),
  );
  const erp = await call(() =>
    docker.createContainer({
      name: layout.erpContainer,
      Image: input.image,
      Labels: labels("erp", { "berth.deployment_id": input.deploymentId, "berth.erp_version": input.erpVersion }),
      Env: erpEnvironment({}),
      ExposedPorts: { [ERP_HTTP_PORT]: {} },
      HostConfig: {
        NetworkMode: layout.network,
        Binds: binds,
        PortBindings: { [ERP_HTTP_PORT]: [{ HostIp: "127.0.0.1", HostPort: "" }] },
        RestartPolicy: { Name: "unless-stopped" },
        NanoCpus: sizing.nano_cpus,
        Memory: sizing.memory_bytes,
      },
    }),
  );
  const erpCreated = performance.now();
  await owned(erp.id);
  await call(() => docker.getContainer(erp.id).start());
  const details = await inspect(erp.id);
  const hostPort = Number(details?.NetworkSettings.Ports?.[ERP_HTTP_PORT]?.[0]?.HostPort);
  if (!Number.isInteger(hostPort) || hostPort <= 0) throw new Error("port 8069 is not published");
  const erpCreateMs = erpCreated - mark;
  const erpStartMs = performance.now() - erpCreated;
  done("starting_container");
  done("installing_dependencies");
  done("initializing_database");
  done("verifying_dns");

  // configuring_traefik: no domain, the routing file is removed
  await rm(layout.proxyFile, { force: true });
  done("configuring_traefik");

  // health_check: GET /web/login (it needs the ERP's registry, health-check.ts) until 200, checking the container between attempts
  const url = `http://127.0.0.1:${hostPort}/web/login`;
  const healthDeadline = Date.now() + HEALTH_TIMEOUT_MS;
  let healthAttempts = 0;
  while (true) {
    healthAttempts += 1;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      await response.text();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    const state = await inspect(erp.id);
    if (state === null || !state.State.Running) throw new Error(`the ERP container stopped (exit code ${state?.State.ExitCode})`);
    if (Date.now() + HEALTH_INTERVAL_MS > healthDeadline) throw new Error(`the ERP was not healthy within ${HEALTH_TIMEOUT_MS / 1000} s`);
    await sleep(HEALTH_INTERVAL_MS);
  }
  done("health_check");
  done("completed");

    const inside: Inside = {
    pg_create_ms: pgCreated - pgCreating,
    pg_start_ms: pgStarted - pgCreated,
    pg_ready_ms: pgReady - pgStarted,
    erp_create_ms: erpCreateMs,
    erp_start_ms: erpStartMs,
    health_attempts: healthAttempts,
  };
  return { totalMs: performance.now() - started, phases, hostPort, dockerCalls, pgProbes, inside };
}

/** docker exec with stdout and stderr attached, as workloads.ts runs it: create, start (hijacked), wait, inspect. */
async function execExitCode(docker: Docker, info: Docker.ContainerInspectInfo, cmd: string[], count: () => void): Promise<number> {
  count();
  count();
  const exec = await docker.getContainer(info.Id).exec({ Cmd: cmd, AttachStdin: false, AttachStdout: true, AttachStderr: true });
  const socket = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  try {
    socket.resume();
    await finished(socket).catch(() => undefined);
  } finally {
    socket.destroy();
  }
  // As workloads.ts's exitCodeOf: the stream can end just before the engine records the exit.
  for (let attempt = 0; ; attempt++) {
    count();
    const state = await exec.inspect();
    if (!state.Running && state.ExitCode !== null) return state.ExitCode;
    if (attempt >= 50) return -1;
    await sleep(50);
  }
}
