// Where a dump's loader runs, against real containers (berth-test/postgres:15): psql (plain
// dumps, loadSqlDump) and pg_restore (Berth's backups, restoreDump) run in a one-off container
// with no network, as nobody, with no capabilities, no-new-privileges, a read-only root file
// system and only the database's socket volume (read-only), and not in the database
// container, which sits on the environment's network; the container is gone afterwards. From
// that container's spec psql reaches the database over the socket but no address of the
// environment's network, which a psql in the database container reaches. A database
// container made before its socket volume still loads (docker exec), is left alone while its
// ERP serves, and a deploy that finds the ERP stopped recreates it on the same data.
// Needs `bash .ci/docker-setup.sh` first.
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { PassThrough, Readable } from "node:stream";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOCKER_SOCKET } from "../../agent/agent.test-helpers.ts";
import { systemClock } from "../../clock.ts";
import { environmentFilter, environmentLabels } from "../../docker/labels.ts";
import { createExecutorHarness, finishSuite, PG_IMAGE, requireTestImages } from "../executor.test-helpers.ts";
import { createDatabase, dropDatabase, restoreDump } from "./database-swap.ts";
import { environmentLayout, type EnvironmentLayout } from "./environment-layout.ts";
import { loaderSpec, socketVolumeOf } from "./loader-container.ts";
import { ensurePostgres, waitForPostgres } from "./postgres.ts";
import { loadSqlDump } from "./sql-dump.ts";

const SUITE = "executor-loader-container";
const DUMP = "-- Dumped by pg_dump version 15.8\nSET client_encoding = 'UTF8';\nCREATE TABLE public.t (a text);\nCOPY public.t (a) FROM stdin;\nloaded\n\\.\n";
const scope = { log: () => undefined, signal: new AbortController().signal };

describe("a dump's loader", () => {
  const h = createExecutorHarness(SUITE);
  const raw = new Dockerode({ socketPath: DOCKER_SOCKET });
  const layout = environmentLayout(h.stateDir, randomUUID());
  let db = "";
  let n = 0;
  const su = async (sql: string, database = "postgres", container = db) => {
    const r = await h.docker.exec(container, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", sql], { deadlineMs: 30_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  const newDatabase = async (container = db) => {
    const name = `odoo_restore_${Date.now().toString(36)}${String(++n).padStart(3, "0")}`;
    await createDatabase(h.docker, container, name);
    return name;
  };
  const ready = (l: EnvironmentLayout) => ensurePostgres(h.docker, l, scope, { image: PG_IMAGE, extraLabels: h.labels, readyTimeoutMs: 120_000, clock: systemClock });

  /**
   * Starts `load` on a dump held back until a loader container of `env` shows up (null after
   * 60 s: none came), then lets the dump through; returns that container as Docker shows it
   * mid-load and whether a psql or pg_restore ran in the database container meanwhile.
   */
  const duringLoad = async (env: string, dbContainer: string, dump: Buffer, load: (stdin: Readable) => Promise<void>) => {
    const stdin = new PassThrough();
    const loading = load(stdin);
    loading.catch(() => undefined);
    let loader: Dockerode.ContainerInspectInfo | null = null;
    for (let i = 0; i < 120 && loader === null; i++) {
      const [found] = await h.docker.listContainers(environmentFilter(env, "db-loader"));
      if (found !== undefined) loader = await raw.getContainer(found.id).inspect();
      else await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const top = (await raw.getContainer(dbContainer).top({ ps_args: "-eo pid,args" })) as { Processes: string[][] };
    const inDb = top.Processes.map((p) => p.join(" ")).filter((p) => /\b(psql|pg_restore)\b/.test(p));
    stdin.end(dump);
    await loading;
    return { loader, inDb };
  };

  const expectConfined = (loader: Dockerode.ContainerInspectInfo | null, socketVolume: string) => {
    expect(loader, "no loader container came: the load ran elsewhere").not.toBeNull();
    const c = loader!;
    expect(c.HostConfig.NetworkMode).toBe("none");
    expect(Object.keys(c.NetworkSettings.Networks)).toEqual(["none"]);
    expect(c.Config.User).toBe("65534:65534");
    expect(c.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(c.HostConfig.SecurityOpt).toEqual(["no-new-privileges"]);
    expect(c.HostConfig.ReadonlyRootfs).toBe(true);
    // The socket volume, read-only, and nothing else: no data, no anonymous volume for the image's VOLUME.
    expect(c.Mounts.map((m) => ({ name: m.Name, at: m.Destination, rw: m.RW }))).toEqual([{ name: socketVolume, at: "/var/run/postgresql", rw: false }]);
    expect(c.HostConfig.Tmpfs).toEqual({ "/var/lib/postgresql/data": "ro,size=16k" });
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    await h.docker.createNetwork(layout.network, environmentLabels(layout.environmentId, "network", h.labels));
    db = (await ready(layout)).containerId;
  }, 240_000);

  afterAll(() => finishSuite(SUITE, h), 120_000);

  it("psql of a plain dump runs in a one-off container with no network, as nobody, with no capabilities, then is removed", async () => {
    const database = await newDatabase();
    const { loader, inDb } = await duringLoad(layout.environmentId, db, Buffer.from(DUMP), (stdin) => loadSqlDump(h.docker, db, database, stdin, 120_000));
    expectConfined(loader, layout.dbSocketVolume);
    expect(loader!.Config.Entrypoint).toEqual(["psql"]);
    expect(inDb).toEqual([]);
    expect(await su("SELECT a FROM public.t", database)).toBe("loaded");
    expect(await h.docker.listContainers(environmentFilter(layout.environmentId, "db-loader"))).toEqual([]);
    expect(await su("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'")).toBe("0");
    await dropDatabase(h.docker, db, database);
  }, 180_000);

  it("pg_restore of Berth's own (custom-format) dump runs likewise", async () => {
    const source = await newDatabase();
    await su("CREATE TABLE kept (a text); INSERT INTO kept VALUES ('restored')", source);
    const r = await h.docker.exec(db, ["sh", "-c", `pg_dump -U odoo --format=custom -d ${source} | base64 -w0`], { deadlineMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    const database = await newDatabase();
    const { loader, inDb } = await duringLoad(layout.environmentId, db, Buffer.from(r.stdout, "base64"), (stdin) => restoreDump(h.docker, db, database, stdin, 120_000));
    expectConfined(loader, layout.dbSocketVolume);
    expect(loader!.Config.Entrypoint).toEqual(["pg_restore"]);
    expect(inDb).toEqual([]);
    expect(await su("SELECT a FROM kept", database)).toBe("restored");
    expect(await h.docker.listContainers(environmentFilter(layout.environmentId, "db-loader"))).toEqual([]);
    await dropDatabase(h.docker, db, database);
    await dropDatabase(h.docker, db, source);
  }, 180_000);

  it("from the loader's container psql reaches the database over the socket, and nothing on the environment's network", async () => {
    const details = (await h.docker.inspectContainer(db))!;
    const address = (await raw.getContainer(db).inspect()).NetworkSettings.Networks[layout.network]!.IPAddress;
    expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const psql = (...args: string[]) => ["psql", "-U", "odoo", "-d", "postgres", "-X", "-A", "-t", ...args, "-c", "SELECT 'reached'"];
    const run = async (cmd: string[]) => h.docker.runToCompletion(loaderSpec(details, socketVolumeOf(details)!, cmd), { deadlineMs: 60_000 });

    const socket = await run(psql());
    expect(socket.exitCode, socket.tail.join("\n")).toBe(0);
    expect(socket.tail).toContain("reached");
    // The database's own address on the environment's network (where the ERP and the proxy are).
    const network = await run(psql("-h", address, "-w"));
    expect(network.exitCode).not.toBe(0);
    expect(network.tail.join("\n")).toMatch(/Network is unreachable/);
    // Where the loader ran before (docker exec in the database container, as nobody), the
    // same address answers: it asks for a password, so the server was reached.
    const before = await h.docker.exec(db, psql("-h", address, "-w"), { deadlineMs: 30_000, user: "65534:65534" });
    expect(before.stderr).toMatch(/password/);
  }, 120_000);

  it("a database container made before its socket volume still loads; a deploy recreates it once its ERP is stopped, data kept", async () => {
    const old = environmentLayout(h.stateDir, randomUUID());
    await h.docker.createNetwork(old.network, environmentLabels(old.environmentId, "network", h.labels));
    await mkdir(old.dir, { recursive: true });
    await writeFile(old.dbPasswordFile, "secret\n", { mode: 0o600 });
    await h.docker.createVolume(old.dbVolume, environmentLabels(old.environmentId, "db-volume", h.labels));
    // As ensurePostgres made it before the socket volume.
    const oldDb = await h.docker.createContainer({
      name: old.dbContainer,
      image: PG_IMAGE,
      labels: environmentLabels(old.environmentId, "db", h.labels),
      env: ["POSTGRES_USER=odoo", "POSTGRES_PASSWORD=secret", "POSTGRES_DB=postgres"],
      network: old.network,
      binds: [`${old.dbVolume}:/var/lib/postgresql/data`],
      restartPolicy: "unless-stopped",
    });
    await h.docker.startContainer(oldDb);
    await waitForPostgres(h.docker, oldDb, { signal: scope.signal, timeoutMs: 120_000, clock: systemClock });
    expect(socketVolumeOf((await h.docker.inspectContainer(oldDb))!)).toBeNull();

    const database = await newDatabase(oldDb);
    await loadSqlDump(h.docker, oldDb, database, Readable.from([Buffer.from(DUMP)]), 120_000);
    expect(await su("SELECT a FROM public.t", database, oldDb)).toBe("loaded");
    await su("CREATE TABLE survives (a text); INSERT INTO survives VALUES ('kept')", "postgres", oldDb);

    // A serving ERP (a stand-in labelled as the environment's ERP) is not cut off.
    const erp = await h.docker.createContainer({
      name: old.erpContainer,
      image: PG_IMAGE,
      labels: environmentLabels(old.environmentId, "erp", h.labels),
      entrypoint: ["sleep", "600"],
      network: "none",
    });
    await h.docker.startContainer(erp);
    expect((await ready(old)).containerId).toBe(oldDb);
    await h.docker.removeContainer(erp);

    const recreated = (await ready(old)).containerId;
    expect(recreated).not.toBe(oldDb);
    const details = (await h.docker.inspectContainer(recreated))!;
    expect(socketVolumeOf(details)).toBe(old.dbSocketVolume);
    expect(details.image).toBe(PG_IMAGE);
    expect(await su("SELECT a FROM survives", "postgres", recreated)).toBe("kept");
    const again = await newDatabase(recreated);
    const { loader } = await duringLoad(old.environmentId, recreated, Buffer.from(DUMP), (stdin) => loadSqlDump(h.docker, recreated, again, stdin, 120_000));
    expectConfined(loader, old.dbSocketVolume);
    expect(await su("SELECT a FROM public.t", again, recreated)).toBe("loaded");
  }, 420_000);
});
