// Proves the locally built test images (test/images/build.sh) behave like the official ones
// where Berth relies on them: an isolated network, PostgreSQL on a named volume, the ERP
// configured by odoo.conf, /web/health, and data that survives restarts and a redeploy.
// Needs a running Docker engine with the images built (.ci/docker-setup.sh does both); it
// fails, never skips, without them.
import { randomBytes } from "node:crypto";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import Docker from "dockerode";
import type { Container } from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.ts";

const PG_IMAGE = "berth-test/postgres:15";
const ERP_IMAGE = "berth-test/erp:17.0";
const ERP_ALIASES = ["berth-test/erp:18.0", "berth-test/erp:16.0"];
const SUITE_LABEL = "berth.test.suite";
const RUN_LABEL = "berth.test.run";
const SUITE = "images";

interface Row {
  id: number;
  note: string;
  created_at: string;
}
interface RowsResponse {
  database: string;
  server_version: string;
  addons_version: string | null;
  filestore_marker: boolean;
  rows: Row[];
}

const docker = new Docker();
const runId = `${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
const prefix = `berth-imgtest-${runId}`;
const labels = { [SUITE_LABEL]: SUITE, [RUN_LABEL]: runId };
const dbPassword = randomBytes(12).toString("hex");
const names = {
  network: `${prefix}-net`,
  pgVolume: `${prefix}-pgdata`,
  erpVolume: `${prefix}-erpdata`,
  pg: `${prefix}-db`,
  erp: `${prefix}-erp`,
};
let workDir = "";
let pg: Container | undefined;
let erp: Container | undefined;
let erpBase = "";
let dockerReachable = false;

// Without a TTY, Docker frames output as [stream, 0, 0, 0, size (4 bytes, big-endian)] + data.
function demux(buf: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buf.length) {
    const size = buf.readUInt32BE(at + 4);
    parts.push(buf.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8");
}

async function logsOf(container: Container | undefined): Promise<string> {
  if (!container) return "(no container)";
  try {
    return demux(await container.logs({ stdout: true, stderr: true, tail: 40 }));
  } catch (err) {
    return `(logs unavailable: ${String(err)})`;
  }
}

async function exec(container: Container, cmd: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await run.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  const errChunks: Buffer[] = [];
  out.on("data", (c: Buffer) => chunks.push(c));
  err.on("data", (c: Buffer) => errChunks.push(c));
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  const info = await run.inspect();
  return {
    code: info.ExitCode ?? -1,
    stdout: Buffer.concat(chunks).toString("utf8"),
    stderr: Buffer.concat(errChunks).toString("utf8"),
  };
}

async function http(path: string, init?: RequestInit): Promise<Response> {
  if (!erpBase) throw new Error("the ERP never became reachable (see the first failure)");
  return fetch(`${erpBase}${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
}

async function rows(): Promise<RowsResponse> {
  const res = await http("/berth/rows");
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as RowsResponse;
}

// Polls until fn() holds (an error counts as "not yet"); fails at once when a container
// stops, and on timeout the error carries the containers' logs.
async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  let last = "";
  await waitUntil(
    what,
    async () => {
      try {
        if (await fn()) return true;
      } catch (err) {
        last = String(err);
      }
      for (const c of [pg, erp]) {
        if (!c) continue;
        const state = (await c.inspect()).State;
        if (!state.Running && !state.Restarting) {
          throw new Error(`${what}: container ${c.id.slice(0, 12)} stopped (exit ${state.ExitCode})\n${await logsOf(c)}`);
        }
      }
      return false;
    },
    { timeoutMs, intervalMs: 250, detail: async () => `(${last})\n--- postgres:\n${await logsOf(pg)}\n--- erp:\n${await logsOf(erp)}` },
  );
}

async function pgReady(): Promise<boolean> {
  if (!pg) return false;
  // Over TCP: during first-start set-up the server listens on its socket only.
  const r = await exec(pg, ["pg_isready", "-q", "-h", "127.0.0.1", "-U", "odoo"]);
  return r.code === 0;
}

async function erpHealthy(): Promise<boolean> {
  const res = await fetch(`${erpBase}/web/health`, { signal: AbortSignal.timeout(3_000) });
  return res.status === 200 && (await res.text()) === '{"status": "pass"}';
}

async function startErp(addonsDir: string): Promise<void> {
  const confPath = join(workDir, "odoo.conf");
  erp = await docker.createContainer({
    name: names.erp,
    Image: ERP_IMAGE,
    Labels: labels,
    ExposedPorts: { "8069/tcp": {} },
    HostConfig: {
      NetworkMode: names.network,
      Binds: [
        `${confPath}:/etc/odoo/odoo.conf:ro`,
        `${names.erpVolume}:/var/lib/odoo`,
        `${addonsDir}:/mnt/extra-addons:ro`,
      ],
      // An empty host port: Docker picks a free one, on loopback only.
      PortBindings: { "8069/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] },
    },
  });
  await erp.start();
  await waitForErp("the ERP's /web/health");
}

// Docker picks a new host port each time the container starts, so read it again every time.
async function waitForErp(what: string): Promise<void> {
  if (!erp) throw new Error("no ERP container");
  const ports = (await erp.inspect()).NetworkSettings.Ports["8069/tcp"];
  const hostPort = ports?.[0]?.HostPort;
  if (!hostPort) throw new Error(`port 8069 of the ERP container was not published: ${JSON.stringify(ports)}`);
  erpBase = `http://127.0.0.1:${hostPort}`;
  await waitFor(what, erpHealthy, 40_000);
}

async function removeErp(): Promise<void> {
  if (!erp) return;
  await erp.remove({ force: true, v: true });
  erp = undefined;
}

// Leftovers of runs that died before their afterAll, older than any live run can be.
async function removeStale(): Promise<void> {
  const cutoff = Date.now() / 1000 - 30 * 60;
  const filters = { label: [`${SUITE_LABEL}=${SUITE}`] };
  for (const c of await docker.listContainers({ all: true, filters })) {
    if (c.Created < cutoff) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  }
  for (const n of await docker.listNetworks({ filters })) {
    if (Date.parse(n.Created) / 1000 < cutoff) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  }
  const { Volumes } = await docker.listVolumes({ filters });
  for (const v of Volumes ?? []) {
    const created = (v as { CreatedAt?: string }).CreatedAt;
    if (created && Date.parse(created) / 1000 < cutoff) await docker.getVolume(v.Name).remove().catch(() => undefined);
  }
}

async function removeRun(): Promise<string[]> {
  const problems: string[] = [];
  const filters = { label: [`${RUN_LABEL}=${runId}`] };
  const attempt = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      problems.push(`${what}: ${String(err)}`);
    }
  };
  for (const c of await docker.listContainers({ all: true, filters })) {
    await attempt(`container ${c.Id}`, () => docker.getContainer(c.Id).remove({ force: true, v: true }));
  }
  for (const n of await docker.listNetworks({ filters })) {
    await attempt(`network ${n.Name}`, () => docker.getNetwork(n.Id).remove());
  }
  const { Volumes } = await docker.listVolumes({ filters });
  for (const v of Volumes ?? []) {
    await attempt(`volume ${v.Name}`, () => docker.getVolume(v.Name).remove());
  }
  return problems;
}

describe("Docker test images", () => {
  beforeAll(async () => {
    try {
      await docker.ping();
      dockerReachable = true;
    } catch (err) {
      throw new Error(
        `Docker engine unreachable (${String(err)}). These tests need a running engine and the test ` +
          "images: run `bash .ci/docker-setup.sh` (as root) first.",
      );
    }
    for (const tag of [PG_IMAGE, ERP_IMAGE, ...ERP_ALIASES]) {
      try {
        await docker.getImage(tag).inspect();
      } catch {
        throw new Error(`image ${tag} is missing: run \`bash test/images/build.sh\` (or .ci/docker-setup.sh)`);
      }
    }
    await removeStale();

    workDir = await mkdtemp(join(tmpdir(), "berth-imgtest-"));
    await writeFile(
      join(workDir, "odoo.conf"),
      [
        "[options]",
        "addons_path = /mnt/extra-addons",
        "data_dir = /var/lib/odoo",
        "db_host = db",
        "db_port = 5432",
        "db_user = odoo",
        `db_password = ${dbPassword}`,
        "db_name = berth_probe_db",
        "http_port = 8069",
        "workers = 0",
        "limit_memory_hard = 1677721600",
        "list_db = False",
        "",
      ].join("\n"),
      { mode: 0o644 },
    );
    for (const version of ["v1", "v2"]) {
      await mkdir(join(workDir, `addons-${version}`), { mode: 0o755 });
      await writeFile(join(workDir, `addons-${version}`, "VERSION"), `${version}\n`, { mode: 0o644 });
    }

    await docker.createNetwork({ Name: names.network, Driver: "bridge", Labels: labels });
    await docker.createVolume({ Name: names.pgVolume, Labels: labels });
    await docker.createVolume({ Name: names.erpVolume, Labels: labels });
    pg = await docker.createContainer({
      name: names.pg,
      Image: PG_IMAGE,
      Labels: labels,
      Env: ["POSTGRES_USER=odoo", `POSTGRES_PASSWORD=${dbPassword}`, "POSTGRES_DB=postgres"],
      HostConfig: { NetworkMode: names.network, Binds: [`${names.pgVolume}:/var/lib/postgresql/data`] },
      NetworkingConfig: { EndpointsConfig: { [names.network]: { Aliases: ["db"] } } },
    });
    await pg.start();
    await waitFor("PostgreSQL to accept TCP connections", pgReady, 40_000);
  }, 90_000);

  afterAll(async () => {
    const problems = dockerReachable ? await removeRun() : [];
    if (workDir) await rm(workDir, { recursive: true, force: true });
    if (problems.length) throw new Error(`clean-up left resources behind:\n${problems.join("\n")}`);
  }, 60_000);

  it("starts the ERP from odoo.conf, healthy, with the first-start row and file store", async () => {
    await startErp(join(workDir, "addons-v1"));
    const body = await rows();
    expect(body.database).toBe("berth_probe_db");
    expect(body.addons_version).toBe("v1");
    expect(body.filestore_marker).toBe(true);
    expect(body.rows.map((r) => r.note)).toEqual(["created on first start"]);

    const info = (await (await http("/berth/info")).json()) as { uid: number; options: Record<string, string> };
    expect(info.uid).not.toBe(0);
    expect(info.options.db_password).toBe("********");
    expect(info.options.limit_memory_hard).toBe("1677721600");

    const db = await http("/web/health?db_server_status=1");
    expect(db.status).toBe(200);
    expect(await db.json()).toEqual({ status: "pass", db_server_status: true });
    expect((await http("/")).status).toBe(200);
  }, 60_000);

  it("adds rows over HTTP", async () => {
    const posted = await http("/berth/rows", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ note: "before restarts ✓" }),
    });
    expect(posted.status).toBe(201);
    expect(((await posted.json()) as Row).note).toBe("before restarts ✓");
    const added = await http(`/berth/add?note=${encodeURIComponent("second & last")}`);
    expect(added.status).toBe(201);
    expect((await rows()).rows.map((r) => r.note)).toEqual([
      "created on first start",
      "before restarts ✓",
      "second & last",
    ]);
  }, 30_000);

  it("reports the database as down while PostgreSQL does not answer", async () => {
    if (!pg) throw new Error("no postgres container");
    // Paused rather than stopped: the name `db` keeps resolving, so nothing asks DNS outside.
    await pg.pause();
    try {
      const plain = await http("/web/health");
      expect(plain.status).toBe(200);
      const db = await http("/web/health?db_server_status=1");
      expect(db.status).toBe(500);
      expect(await db.json()).toEqual({ status: "fail", db_server_status: false });
    } finally {
      await pg.unpause();
    }
  }, 30_000);

  it("keeps the rows across ERP and PostgreSQL restarts", async () => {
    if (!pg || !erp) throw new Error("containers missing");
    const before = (await rows()).rows;
    await erp.restart({ t: 10 });
    await waitForErp("the ERP after its restart");

    const stopStarted = Date.now();
    await pg.stop({ t: 20 });
    const pgState = (await pg.inspect()).State;
    // A clean, fast shutdown (STOPSIGNAL SIGINT reaching postgres as PID 1), not a kill after the timeout.
    expect(pgState.ExitCode, await logsOf(pg)).toBe(0);
    expect(Date.now() - stopStarted).toBeLessThan(15_000);
    await pg.start();
    await waitFor("PostgreSQL after its restart", pgReady, 40_000);

    expect((await rows()).rows).toEqual(before);
    expect(await logsOf(pg)).not.toMatch(/database system was not properly shut down/);
  }, 90_000);

  it("keeps data and file store when the ERP is redeployed with other code, and dumps restore", async () => {
    if (!pg) throw new Error("no postgres container");
    const before = (await rows()).rows;
    await removeErp();
    await startErp(join(workDir, "addons-v2"));
    const after = await rows();
    expect(after.addons_version).toBe("v2");
    expect(after.filestore_marker).toBe(true);
    expect(after.rows).toEqual(before);

    const dump = await exec(pg, ["pg_dump", "-U", "odoo", "--no-owner", "-d", "berth_probe_db"]);
    expect(dump.code, dump.stderr).toBe(0);
    expect(dump.stdout).toContain("CREATE TABLE public.berth_probe");
    expect(dump.stdout).toContain("second & last");

    const custom = await exec(pg, [
      "sh",
      "-c",
      "pg_dump -U odoo -Fc -d berth_probe_db > /tmp/d.dump && createdb -U odoo restored && " +
        "pg_restore -U odoo --no-owner -d restored /tmp/d.dump && " +
        "psql -U odoo -d restored -Atc 'SELECT count(*) FROM berth_probe'",
    ]);
    expect(custom.code, custom.stderr).toBe(0);
    expect(custom.stdout.trim()).toBe(String(before.length));
  }, 90_000);
});
