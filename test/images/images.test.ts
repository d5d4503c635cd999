// Proves the locally built test images (test/images/build.sh) behave like the official ones
// where Berth relies on them: an isolated network, PostgreSQL on a named volume, the ERP
// configured by odoo.conf, /web/health, and data that survives restarts and a redeploy.
// Needs a running Docker engine with the images built (.ci/docker-setup.sh does both); it
// fails, never skips, without them.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import Docker from "dockerode";
import type { Container } from "dockerode";
import WebSocket from "ws";
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
interface RequestReport {
  port: number;
  method: string;
  path: string;
  host: string;
  forwarded_proto: string;
  forwarded_for: string;
  forwarded_host: string;
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
const adminPassword = randomBytes(12).toString("hex");
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
// The host port published for gevent_port (8072), where the ERP serves websockets with workers.
let erpWsPort = 0;
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
    ExposedPorts: { "8069/tcp": {}, "8072/tcp": {} },
    HostConfig: {
      NetworkMode: names.network,
      Binds: [
        `${confPath}:/etc/odoo/odoo.conf:ro`,
        `${names.erpVolume}:/var/lib/odoo`,
        `${addonsDir}:/mnt/extra-addons:ro`,
      ],
      // An empty host port: Docker picks a free one, on loopback only.
      PortBindings: {
        "8069/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }],
        "8072/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }],
      },
    },
  });
  await erp.start();
  await waitForErp("the ERP's /web/health");
}

// Docker picks a new host port each time the container starts, so read it again every time.
async function waitForErp(what: string): Promise<void> {
  if (!erp) throw new Error("no ERP container");
  const published = (await erp.inspect()).NetworkSettings.Ports;
  const hostPort = published["8069/tcp"]?.[0]?.HostPort;
  if (!hostPort) throw new Error(`port 8069 of the ERP container was not published: ${JSON.stringify(published)}`);
  erpBase = `http://127.0.0.1:${hostPort}`;
  erpWsPort = Number(published["8072/tcp"]?.[0]?.HostPort ?? 0);
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

interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// A raw HTTP/1.x connection: what is written goes out byte for byte (pipelined requests in one
// write, say) and the answers are cut apart by their Content-Length, as a client must on a
// persistent connection. `closed` resolves when the server ends the connection.
class RawHttp {
  private buf = Buffer.alloc(0);
  private readonly answers: HttpAnswer[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  readonly opened = performance.now();
  readonly closed: Promise<number>;

  private constructor(private readonly sock: Socket) {
    this.closed = new Promise((resolve) => {
      sock.on("close", () => {
        this.ended = true;
        this.wake?.();
        resolve(performance.now());
      });
    });
    sock.on("error", () => undefined);
    sock.on("data", (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      for (;;) {
        const end = this.buf.indexOf("\r\n\r\n");
        if (end < 0) break;
        const lines = this.buf.subarray(0, end).toString("latin1").split("\r\n");
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(":");
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers["content-length"] ?? "NaN");
        if (!Number.isInteger(length)) throw new Error(`an answer without Content-Length: ${lines.join(" | ")}`);
        if (this.buf.length < end + 4 + length) break;
        const status = Number(lines[0]?.split(" ")[1]);
        this.answers.push({ status, headers, body: this.buf.subarray(end + 4, end + 4 + length).toString("utf8") });
        this.buf = this.buf.subarray(end + 4 + length);
      }
      this.wake?.();
    });
  }

  static open(port: number): Promise<RawHttp> {
    return new Promise((resolve, reject) => {
      const sock = connect(port, "127.0.0.1");
      sock.once("connect", () => resolve(new RawHttp(sock)));
      sock.once("error", reject);
    });
  }

  write(data: string | Buffer): void {
    this.sock.write(data);
  }

  // The next answer, or an error when the connection ends (or nothing comes) first.
  async next(timeoutMs = 10_000): Promise<HttpAnswer> {
    const deadline = performance.now() + timeoutMs;
    while (this.answers.length === 0) {
      if (this.ended) throw new Error(`connection closed, unparsed: ${JSON.stringify(this.buf.toString("latin1"))}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no answer within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.answers.shift() as HttpAnswer;
  }

  // Whether the server has ended the connection within ms.
  async closesWithin(ms: number): Promise<boolean> {
    return Promise.race([this.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
  }

  destroy(): void {
    this.sock.destroy();
  }
}

const erpPort = (): number => Number(new URL(erpBase).port);

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const wsAccept = (key: string): string => createHash("sha1").update(key + WS_GUID).digest("base64");

interface Frame {
  opcode: number;
  masked: boolean;
  // The length form the sender used: 7 (up to 125), 16 (126 + 2 bytes) or 64 (127 + 8 bytes).
  lengthBits: 7 | 16 | 64;
  payload: Buffer;
}

// Complete frames at the start of buf, and how many bytes they took.
function parseFrames(buf: Buffer): { frames: Frame[]; used: number } {
  const frames: Frame[] = [];
  let at = 0;
  for (;;) {
    if (at + 2 > buf.length) break;
    const b1 = buf[at + 1] ?? 0;
    let len = b1 & 0x7f;
    let head = 2;
    let lengthBits: Frame["lengthBits"] = 7;
    if (len === 126) {
      if (at + 4 > buf.length) break;
      len = buf.readUInt16BE(at + 2);
      head = 4;
      lengthBits = 16;
    } else if (len === 127) {
      if (at + 10 > buf.length) break;
      len = Number(buf.readBigUInt64BE(at + 2));
      head = 10;
      lengthBits = 64;
    }
    const masked = (b1 & 0x80) !== 0;
    if (masked) head += 4;
    if (at + head + len > buf.length) break;
    const payload = Buffer.from(buf.subarray(at + head, at + head + len));
    if (masked) {
      const mask = buf.subarray(at + head - 4, at + head);
      for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] ?? 0) ^ (mask[i % 4] ?? 0);
    }
    frames.push({ opcode: (buf[at] ?? 0) & 0x0f, masked, lengthBits, payload });
    at += head + len;
  }
  return { frames, used: at };
}

// A client frame: FIN, masked as RFC 6455 requires of clients.
function clientFrame(opcode: number, payload: Buffer): Buffer {
  if (payload.length > 125) throw new Error("clientFrame: short payloads only");
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] ?? 0)));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length]), mask, masked]);
}

interface RawExchange {
  head: string;
  frames: Frame[];
}

// Sends `request` over plain TCP to a host port and reads the HTTP head and, after a 101,
// the server's frames; when the server's close frame comes it answers with one (as a
// client must) and waits for the server to end the connection.
function rawExchange(port: number, request: Buffer | string, timeoutMs = 15_000): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    let head: string | undefined;
    const frames: Frame[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no end of the exchange within ${timeoutMs} ms: ${head ?? buf.toString("latin1")}`));
    }, timeoutMs);
    sock.on("connect", () => sock.write(request));
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (head === undefined) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        head = buf.subarray(0, end).toString("latin1");
        buf = buf.subarray(end + 4);
      }
      if (!head.startsWith("HTTP/1.1 101")) return;
      const parsed = parseFrames(buf);
      buf = buf.subarray(parsed.used);
      for (const f of parsed.frames) {
        frames.push(f);
        if (f.opcode === 8) sock.write(clientFrame(8, f.payload));
      }
    });
    sock.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on("close", () => {
      clearTimeout(timer);
      if (head === undefined) reject(new Error(`connection closed before a response: ${buf.toString("latin1")}`));
      else resolve({ head: head.startsWith("HTTP/1.1 101") ? head : `${head}\r\n\r\n${buf.toString("utf8")}`, frames });
    });
  });
}

function headerOf(head: string, name: string): string | undefined {
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

interface WsSession {
  accept: string | undefined;
  key: string | undefined;
  messages: string[];
  close: { code: number; reason: string };
}

// A websocket through the `ws` client: the upgrade's key and accept, every text message, the
// close code. onMessage may answer (the socket and the message number are given).
function wsSession(
  url: string,
  options: { headers?: Record<string, string>; onMessage?: (ws: WebSocket, index: number) => void },
  timeoutMs = 15_000,
): Promise<WsSession> {
  return new Promise((resolve, reject) => {
    const session: Omit<WsSession, "close"> = { accept: undefined, key: undefined, messages: [] };
    const ws = new WebSocket(url, {
      headers: options.headers,
      handshakeTimeout: 5_000,
      // The key ws generated, to check the server's accept value against it here.
      finishRequest: (req) => {
        const key = req.getHeader("sec-websocket-key");
        session.key = typeof key === "string" ? key : undefined;
        req.end();
      },
    });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`websocket ${url} not closed within ${timeoutMs} ms (${JSON.stringify(session)})`));
    }, timeoutMs);
    ws.on("upgrade", (res) => {
      session.accept = res.headers["sec-websocket-accept"];
    });
    ws.on("message", (data, isBinary) => {
      session.messages.push(isBinary ? `(binary ${String(data)})` : String(data));
      options.onMessage?.(ws, session.messages.length - 1);
    });
    ws.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    ws.on("close", (code, reason) => {
      clearTimeout(timer);
      resolve({ ...session, close: { code, reason: reason.toString() } });
    });
  });
}

interface ModuleRow {
  name: string;
  state: string;
  latest_version: string | null;
  demo: boolean;
}

// Runs the ERP image once with these server options (one-shot, as a deploy's module install
// or upgrade runs), on the test network with the test's odoo.conf and this add-ons folder.
async function runOdoo(args: string[], addonsDir: string): Promise<{ code: number; logs: string }> {
  const container = await docker.createContainer({
    Image: ERP_IMAGE,
    Labels: labels,
    Cmd: ["odoo", ...args],
    HostConfig: {
      NetworkMode: names.network,
      Binds: [`${join(workDir, "odoo.conf")}:/etc/odoo/odoo.conf:ro`, `${addonsDir}:/mnt/extra-addons:ro`],
    },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    return { code: StatusCode, logs: demux(await container.logs({ stdout: true, stderr: true })) };
  } finally {
    await container.remove({ force: true, v: true });
  }
}

// One psql query in the PostgreSQL container, rows as `a|b|c` lines.
async function psql(database: string, query: string): Promise<string> {
  if (!pg) throw new Error("no postgres container");
  const r = await exec(pg, ["psql", "-U", "odoo", "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", query]);
  if (r.code !== 0) throw new Error(`psql ${query}: ${r.stderr}`);
  return r.stdout.trim();
}

// A module folder as Odoo finds one in the add-ons path: __manifest__.py and maybe more files.
async function writeModule(addonsDir: string, name: string, version: string, files: Record<string, string> = {}): Promise<void> {
  const dir = join(addonsDir, name);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await writeFile(
    join(dir, "__manifest__.py"),
    `# -*- coding: utf-8 -*-\n{\n    'name': '${name}',\n    "version": '${version}',\n    'depends': ['base'],\n    'license': 'LGPL-3',\n}\n`,
    { mode: 0o644 },
  );
  for (const [file, content] of Object.entries(files)) await writeFile(join(dir, file), content, { mode: 0o644 });
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
        // With workers, the ERP also serves gevent_port (8072), where websockets go.
        "workers = 2",
        "limit_memory_hard = 1677721600",
        "list_db = False",
        `admin_passwd = ${adminPassword}`,
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

  it("records base in ir_module_module on first start, with demo data by default, and admin_passwd only as set", async () => {
    const res = await http("/berth/modules");
    expect(res.status).toBe(200);
    expect((await res.json()) as ModuleRow[]).toEqual([
      { name: "base", state: "installed", latest_version: "17.0.1.3", demo: true },
    ]);
    // Base's demo data is the flag alone: berth_probe keeps just its first-start row.
    expect((await rows()).rows.map((r) => r.note)).toEqual(["created on first start"]);
    const logs = demux(await (erp as Container).logs({ stdout: true, stderr: true }));
    expect(logs).toMatch(/odoo\.tools\.config: admin_passwd is set/);
    expect(logs).not.toContain(adminPassword);
    const info = (await (await http("/berth/info")).json()) as { options: Record<string, string> };
    expect(info.options.admin_passwd).toBe("********");
  }, 30_000);

  it("reports what reached it: local port, method, path, Host and X-Forwarded-*", async () => {
    const res = await http("/berth/request?x=1", {
      headers: { "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.7", "x-forwarded-host": "erp.example.test" },
    });
    expect(res.status).toBe(200);
    const report = (await res.json()) as RequestReport;
    expect(report).toEqual({
      port: 8069,
      method: "GET",
      path: "/berth/request",
      host: new URL(erpBase).host,
      forwarded_proto: "https",
      forwarded_for: "203.0.113.7",
      forwarded_host: "erp.example.test",
    });

    // Header names in any case, values trimmed, repeated X-Forwarded-For joined; on gevent_port too.
    const raw = await rawExchange(
      erpWsPort,
      "GET /berth/request HTTP/1.1\r\nhOsT:   erp.example.test  \r\nX-FORWARDED-PROTO:\thttp \r\n" +
        "x-forwarded-for: 198.51.100.1\r\nX-Forwarded-For: 10.0.0.2\r\nConnection: close\r\n\r\n",
    );
    expect(raw.head).toMatch(/^HTTP\/1\.1 200 /);
    const body = raw.head.slice(raw.head.indexOf("\r\n\r\n") + 4);
    expect(JSON.parse(body)).toEqual({
      port: 8072,
      method: "GET",
      path: "/berth/request",
      host: "erp.example.test",
      forwarded_proto: "http",
      forwarded_for: "198.51.100.1, 10.0.0.2",
      forwarded_host: "",
    });
  }, 30_000);

  it("upgrades /websocket on gevent_port like Odoo: the report as a frame, an echo, a clean close", async () => {
    expect(erpWsPort, "8072 published").toBeGreaterThan(0);
    const echo = `round trip ${randomBytes(4).toString("hex")} ✓`;
    // A long X-Forwarded-For makes the first frame longer than 125 bytes (the 16-bit length form).
    const forwardedFor = Array.from({ length: 20 }, (_, i) => `192.0.2.${i + 1}`).join(", ");
    const session = await wsSession(`ws://127.0.0.1:${erpWsPort}/websocket?version=17.0-1`, {
      headers: { "X-Forwarded-Proto": "https", "X-Forwarded-For": forwardedFor, "X-Forwarded-Host": "erp.example.test" },
      onMessage: (ws, index) => {
        if (index === 0) ws.send(echo);
      },
    });
    expect(session.key).toBeTruthy();
    expect(session.accept).toBe(wsAccept(session.key ?? ""));
    expect(session.messages).toHaveLength(2);
    expect(JSON.parse(session.messages[0] ?? "")).toEqual({
      port: 8072,
      method: "GET",
      path: "/websocket",
      host: `127.0.0.1:${erpWsPort}`,
      forwarded_proto: "https",
      forwarded_for: forwardedFor,
      forwarded_host: "erp.example.test",
    });
    expect(session.messages[1]).toBe(echo);
    expect(session.close.code).toBe(1000);

    // Odoo's older path, and a client that never answers: closed (1000) after 5 s, no echo.
    const quiet = await wsSession(`ws://127.0.0.1:${erpWsPort}/longpolling/websocket`, {});
    expect(quiet.messages).toHaveLength(1);
    expect((JSON.parse(quiet.messages[0] ?? "") as RequestReport).path).toBe("/longpolling/websocket");
    expect(quiet.close.code).toBe(1000);
  }, 40_000);

  it("answers the RFC 6455 handshake byte for byte, and 400 without an upgrade", async () => {
    // The RFC's own example key and accept value; a masked text frame sent right behind the request.
    const key = "dGhlIHNhbXBsZSBub25jZQ==";
    expect(wsAccept(key)).toBe("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    const forwardedHost = `${"a".repeat(150)}.example.test`;
    const raw = await rawExchange(
      erpWsPort,
      Buffer.concat([
        Buffer.from(
          "GET /websocket/ HTTP/1.1\r\nHost: erp.example.test\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n" +
            `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nX-Forwarded-Host: ${forwardedHost}\r\n\r\n`,
        ),
        clientFrame(1, Buffer.from("hello")),
      ]),
    );
    expect(raw.head.split("\r\n")[0]).toBe("HTTP/1.1 101 Switching Protocols");
    expect(headerOf(raw.head, "Upgrade")).toBe("websocket");
    expect(headerOf(raw.head, "Connection")).toBe("Upgrade");
    expect(headerOf(raw.head, "Sec-WebSocket-Accept")).toBe("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    expect(raw.frames.map((f) => [f.opcode, f.masked])).toEqual([
      [1, false],
      [1, false],
      [8, false],
    ]);
    const [report, echoed, close] = raw.frames;
    expect(report?.lengthBits).toBe(16);
    expect((JSON.parse(report?.payload.toString("utf8") ?? "") as RequestReport).forwarded_host).toBe(forwardedHost);
    expect(echoed?.payload.toString("utf8")).toBe("hello");
    expect(close?.payload.readUInt16BE(0)).toBe(1000);

    // On http_port as well (the same routes), and 400 when the upgrade or the key is missing.
    const plain = await http("/websocket");
    expect(plain.status).toBe(400);
    expect(await plain.text()).toBe("websocket upgrade expected\n");
    const noKey = await rawExchange(
      erpWsPort,
      "GET /websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    expect(noKey.head).toMatch(/^HTTP\/1\.1 400 /);
    expect(noKey.head).toMatch(/\r\n\r\nwebsocket upgrade expected\n$/);
    // The client closing first gets the server's close (1000) at once.
    const onHttpPort = await wsSession(`${erpBase.replace("http:", "ws:")}/websocket`, {
      onMessage: (ws) => ws.close(1000),
    });
    expect(onHttpPort.messages).toHaveLength(1);
    expect(JSON.parse(onHttpPort.messages[0] ?? "")).toMatchObject({ port: 8069, path: "/websocket" });
    expect(onHttpPort.close.code).toBe(1000);
  }, 40_000);

  it("keeps HTTP/1.1 connections alive: one socket for two requests through node:http's keep-alive agent", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ res: IncomingMessage; body: string; reused: boolean }>((resolve, reject) => {
        const req = httpRequest({ host: "127.0.0.1", port: erpPort(), path, agent, timeout: 10_000 }, (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (body += c));
          res.on("end", () => resolve({ res, body, reused: req.reusedSocket }));
        });
        req.on("error", reject);
        req.on("timeout", () => req.destroy(new Error(`${path}: no answer within 10 s`)));
        req.end();
      });
    try {
      const first = await get("/web/health");
      const second = await get("/berth/request");
      expect(first.res.statusCode).toBe(200);
      expect(first.body).toBe('{"status": "pass"}');
      expect(first.res.headers.connection).toBe("keep-alive");
      expect(first.res.headers["keep-alive"]).toBe("timeout=15");
      expect(first.res.headers["content-length"]).toBe(String(Buffer.byteLength(first.body)));
      expect(second.res.statusCode).toBe(200);
      expect((JSON.parse(second.body) as RequestReport).path).toBe("/berth/request");
      expect(first.reused).toBe(false);
      expect(second.reused).toBe(true);
      expect(second.res.socket).toBe(first.res.socket);
    } finally {
      agent.destroy();
    }
  }, 30_000);

  it("answers pipelined requests in order without losing bytes after a body, and honours Connection: close", async () => {
    const conn = await RawHttp.open(erpPort());
    try {
      // Three requests in one write: a POST whose body is followed at once by the next request.
      const body = JSON.stringify({ jsonrpc: "2.0", params: {} });
      conn.write(
        `POST /web/webclient/version_info HTTP/1.1\r\nHost: a.test\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
          "GET /berth/request?n=2 HTTP/1.1\r\nHost: b.test\r\nX-Forwarded-Proto: https\r\n\r\n" +
          "GET /web/health HTTP/1.1\r\nHost: c.test\r\nConnection: close\r\n\r\n",
      );
      const version = await conn.next();
      expect(version.status).toBe(200);
      expect(version.headers.connection).toBe("keep-alive");
      expect((JSON.parse(version.body) as { result: { server_version: string } }).result.server_version).toBe("17.0");
      const report = await conn.next();
      expect(report.status).toBe(200);
      expect(JSON.parse(report.body)).toMatchObject({ path: "/berth/request", host: "b.test", forwarded_proto: "https" });
      const last = await conn.next();
      expect(last.status).toBe(200);
      expect(last.body).toBe('{"status": "pass"}');
      expect(last.headers.connection).toBe("close");
      expect(await conn.closesWithin(2_000), "closed after Connection: close").toBe(true);
    } finally {
      conn.destroy();
    }

    // HTTP/1.0 closes unless it asks for keep-alive; an error about the request (400, 413) closes.
    const old = await RawHttp.open(erpPort());
    try {
      old.write("GET /web/health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
      expect((await old.next()).headers.connection).toBe("keep-alive");
      old.write("GET /web/health HTTP/1.0\r\n\r\n");
      expect((await old.next()).headers.connection).toBe("close");
      expect(await old.closesWithin(2_000), "closed after an HTTP/1.0 answer").toBe(true);
    } finally {
      old.destroy();
    }
    const tooLarge = await RawHttp.open(erpPort());
    try {
      tooLarge.write("GET /web/health HTTP/1.1\r\n\r\nPOST /berth/rows HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n");
      expect((await tooLarge.next()).status).toBe(200);
      const refused = await tooLarge.next();
      expect(refused.status).toBe(413);
      expect(refused.headers.connection).toBe("close");
      expect(await tooLarge.closesWithin(2_000), "closed after a 413").toBe(true);
    } finally {
      tooLarge.destroy();
    }
  }, 30_000);

  it("keeps an idle connection past REQUEST_SECONDS (20 s) and closes it after 15 s without a request", async () => {
    const conn = await RawHttp.open(erpPort());
    try {
      conn.write("GET /web/health HTTP/1.1\r\nHost: x\r\n\r\n");
      expect((await conn.next()).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 11_000));
      conn.write("GET /web/health HTTP/1.1\r\nHost: x\r\n\r\n");
      const second = await conn.next();
      expect(second.status).toBe(200);
      const answered = performance.now();
      const closed = await conn.closed;
      // Open for longer than one request may take, so the limit is per request, not per connection.
      expect(closed - conn.opened).toBeGreaterThan(21_000);
      expect(closed - answered).toBeGreaterThan(14_000);
      expect(closed - answered).toBeLessThan(17_000);
    } finally {
      conn.destroy();
    }
  }, 45_000);

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

  describe("modules: -i, -u, --stop-after-init, --without-demo, like Odoo's command line", () => {
    const db = "modules_db";
    const addons = (): string => join(workDir, "addons-modules");

    it("-i base --stop-after-init --without-demo=all initialises a new database and exits 0", async () => {
      await mkdir(addons(), { mode: 0o755 });
      await writeModule(addons(), "my_module", "17.0.1.1");
      const run = await runOdoo(["-d", db, "-i", "base", "--stop-after-init", "--without-demo=all"], addons());
      expect(run.code, run.logs).toBe(0);
      expect(run.logs).toMatch(/odoo\.service\.db: Create database `modules_db`/);
      expect(run.logs).toMatch(/Stopping gracefully \(--stop-after-init\)/);
      expect(run.logs).not.toMatch(/HTTP service/);
      // The add-ons path was scanned (update_list): my_module is known, not installed.
      expect(await psql(db, "SELECT name, state, coalesce(latest_version, '-'), demo FROM ir_module_module ORDER BY id")).toBe(
        "base|installed|17.0.1.3|f\nmy_module|uninstalled|-|f",
      );
      expect(await psql(db, "SELECT note FROM berth_probe ORDER BY id")).toBe("created on first start");
    }, 60_000);

    it("-i installs a module from the add-ons path with its manifest version; unknown names are ignored", async () => {
      const run = await runOdoo(["-d", db, "-i", "my_module,no_such_module", "--stop-after-init"], addons());
      expect(run.code, run.logs).toBe(0);
      expect(run.logs).toMatch(/WARNING modules_db odoo\.modules\.loading: invalid module names, ignored: no_such_module/);
      // No demo data: base has none in this database (a module's parents must have it).
      expect(await psql(db, "SELECT state, latest_version, demo FROM ir_module_module WHERE name = 'my_module'")).toBe(
        "installed|17.0.1.1|f",
      );
      expect(await psql(db, "SELECT count(*) FROM ir_module_module WHERE name = 'no_such_module'")).toBe("0");
    }, 60_000);

    it("loads demo data unless told not to: demo = true and a demo row in berth_probe", async () => {
      // A short manifest version is prefixed with the series, as adapt_version does.
      await writeModule(addons(), "demo_module", "2.5");
      const run = await runOdoo(["--database=demo_db", "--init=demo_module", "--stop-after-init"], addons());
      expect(run.code, run.logs).toBe(0);
      expect(await psql("demo_db", "SELECT name, state, latest_version, demo FROM ir_module_module WHERE state = 'installed' ORDER BY id")).toBe(
        "base|installed|17.0.1.3|t\ndemo_module|installed|17.0.2.5|t",
      );
      expect(await psql("demo_db", "SELECT note FROM berth_probe ORDER BY id")).toBe(
        "created on first start\ndemo data of demo_module",
      );
    }, 60_000);

    it("-u upgrades: the new manifest version is recorded and berth_upgrade.sql applied", async () => {
      await writeModule(addons(), "my_module", "17.0.1.2", {
        "berth_upgrade.sql":
          "CREATE TABLE my_module_upgraded (version text NOT NULL);\nINSERT INTO my_module_upgraded VALUES ('17.0.1.2');\n",
      });
      const run = await runOdoo(["-d", db, "-u", "my_module", "--stop-after-init"], addons());
      expect(run.code, run.logs).toBe(0);
      expect(run.logs).toMatch(/Loading module my_module \(1\/1\): upgrade 17\.0\.1\.2/);
      expect(await psql(db, "SELECT state, latest_version FROM ir_module_module WHERE name = 'my_module'")).toBe(
        "installed|17.0.1.2",
      );
      expect(await psql(db, "SELECT version FROM my_module_upgraded")).toBe("17.0.1.2");
    }, 60_000);

    it("FAIL_UPGRADE: the upgrade commits its SQL, then fails with a traceback and exit code 255", async () => {
      await writeModule(addons(), "bad_module", "17.0.1.0");
      const installed = await runOdoo(["-d", db, "-i", "bad_module", "--stop-after-init"], addons());
      expect(installed.code, installed.logs).toBe(0);
      await writeModule(addons(), "bad_module", "17.0.2.0", {
        "berth_upgrade.sql": "CREATE TABLE IF NOT EXISTS bad_module_half (n int);\nINSERT INTO bad_module_half VALUES (1);\n",
        FAIL_UPGRADE: "",
      });
      const run = await runOdoo(["-d", db, "-u", "bad_module", "--stop-after-init"], addons());
      expect(run.code, run.logs).toBe(255);
      expect(run.logs).toMatch(/ERROR modules_db odoo\.modules\.loading: Failed to upgrade module bad_module: /);
      expect(run.logs).toMatch(/CRITICAL modules_db odoo\.service\.server: Failed to initialize database `modules_db`\.\nTraceback \(most recent call last\):\n/);
      expect(run.logs).toMatch(/Transient module states were reset/);
      // The database was changed (committed) although the upgrade failed; the module keeps its old version.
      expect(await psql(db, "SELECT count(*) FROM bad_module_half")).toBe("1");
      expect(await psql(db, "SELECT state, latest_version FROM ir_module_module WHERE name = 'bad_module'")).toBe(
        "installed|17.0.1.0",
      );

      // An SQL error in berth_upgrade.sql fails the module too, and its transaction is rolled back.
      await writeModule(addons(), "my_module", "17.0.1.3", {
        "berth_upgrade.sql": "INSERT INTO my_module_upgraded VALUES ('17.0.1.3');\nSELECT no_such_column FROM berth_probe;\n",
      });
      const broken = await runOdoo(["-d", db, "-u", "my_module", "--stop-after-init"], addons());
      expect(broken.code, broken.logs).toBe(255);
      expect(broken.logs).toMatch(/Failed to upgrade module my_module: .*no_such_column/);
      expect(await psql(db, "SELECT string_agg(version, ',') FROM my_module_upgraded")).toBe("17.0.1.2");
      expect(await psql(db, "SELECT latest_version FROM ir_module_module WHERE name = 'my_module'")).toBe("17.0.1.2");
    }, 90_000);

    it("serves /berth/modules; without --stop-after-init a failed upgrade is logged and the server serves anyway", async () => {
      const server = await docker.createContainer({
        Image: ERP_IMAGE,
        Labels: labels,
        Cmd: ["odoo", "-d", db, "-u", "bad_module"],
        ExposedPorts: { "8069/tcp": {} },
        HostConfig: {
          NetworkMode: names.network,
          Binds: [`${join(workDir, "odoo.conf")}:/etc/odoo/odoo.conf:ro`, `${addons()}:/mnt/extra-addons:ro`],
          PortBindings: { "8069/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }] },
        },
      });
      try {
        await server.start();
        const port = (await server.inspect()).NetworkSettings.Ports["8069/tcp"]?.[0]?.HostPort;
        const base = `http://127.0.0.1:${port ?? "0"}`;
        await waitUntil(
          "the modules_db server's /web/health",
          async () => (await fetch(`${base}/web/health`, { signal: AbortSignal.timeout(3_000) }).catch(() => undefined))?.status === 200,
          { timeoutMs: 40_000, intervalMs: 250, detail: async () => await logsOf(server) },
        );
        const res = await fetch(`${base}/berth/modules`, { signal: AbortSignal.timeout(10_000) });
        expect(res.status).toBe(200);
        expect((await res.json()) as ModuleRow[]).toEqual([
          { name: "bad_module", state: "installed", latest_version: "17.0.1.0", demo: false },
          { name: "base", state: "installed", latest_version: "17.0.1.3", demo: false },
          { name: "demo_module", state: "uninstalled", latest_version: null, demo: false },
          { name: "my_module", state: "installed", latest_version: "17.0.1.2", demo: false },
        ]);
        const logs = await logsOf(server);
        expect(logs).toMatch(/Failed to upgrade module bad_module/);
        expect(await psql(db, "SELECT count(*) FROM bad_module_half")).toBe("2");
      } finally {
        await server.remove({ force: true, v: true });
      }
    }, 90_000);
  });
});
