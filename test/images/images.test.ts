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
import { moduleTestLog } from "../../apps/agent/src/executor/deploy/module-tests.ts";

const PG_IMAGE = "berth-test/postgres:15";
const ERP_IMAGE = "berth-test/erp:17.0";
// One image per series; the official images' user odoo (uid:gid) differs from 18.0 on.
const ERP_TAGS: Record<string, { uid: number; gid: number }> = {
  "16.0": { uid: 101, gid: 101 },
  "17.0": { uid: 101, gid: 101 },
  "18.0": { uid: 100, gid: 101 },
  "19.0": { uid: 100, gid: 101 },
};
const erpImage = (series: string): string => `berth-test/erp:${series}`;
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

// The image's standard add-ons besides base: listed, uninstalled, once a database is set up.
const STANDARD_UNINSTALLED = ["delivery", "google_calendar", "iap", "mail", "microsoft_calendar", "payment", "web"];
const uninstalledRows = (names: string[]) => names.map((name) => ({ name, state: "uninstalled", latest_version: null, demo: false }));
const byName = <T extends { name: string }>(rows: T[]): T[] => rows.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

interface ModuleRow {
  name: string;
  state: string;
  latest_version: string | null;
  demo: boolean;
}

// Runs the ERP image once with these server options (one-shot, as a deploy's module install
// or upgrade runs), on the test network with the test's odoo.conf and this add-ons folder.
async function runOdoo(args: string[], addonsDir: string, image = ERP_IMAGE): Promise<{ code: number; logs: string }> {
  const container = await docker.createContainer({
    Image: image,
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

// Runs IMAGE with CMD through its entrypoint, on the test network with the test's odoo.conf
// mounted (as Berth runs `odoo neutralize -d <db>`): exit code, stdout, stderr apart.
async function runCommand(image: string, cmd: string[], addonsDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const container = await docker.createContainer({
    Image: image,
    Labels: labels,
    Cmd: cmd,
    HostConfig: {
      NetworkMode: names.network,
      Binds: [`${join(workDir, "odoo.conf")}:/etc/odoo/odoo.conf:ro`, `${addonsDir}:/mnt/extra-addons:ro`],
    },
  });
  return runToEnd(container);
}

// Starts CONTAINER, waits for it, removes it: its exit code, stdout and stderr apart.
async function runToEnd(container: Container): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const out = new PassThrough();
    const err = new PassThrough();
    const o: Buffer[] = [];
    const e: Buffer[] = [];
    out.on("data", (c: Buffer) => o.push(c));
    err.on("data", (c: Buffer) => e.push(c));
    const raw = await container.logs({ stdout: true, stderr: true });
    docker.modem.demuxStream(new PassThrough().end(raw), out, err);
    await new Promise((resolve) => setImmediate(resolve));
    return { code: StatusCode, stdout: Buffer.concat(o).toString("utf8"), stderr: Buffer.concat(e).toString("utf8") };
  } finally {
    await container.remove({ force: true, v: true });
  }
}

// Runs IMAGE with CMD and no network (option parsing, `id`): exit code, stdout, stderr.
async function runBare(image: string, cmd: string[], entrypoint?: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const container = await docker.createContainer({ Image: image, Labels: labels, Cmd: cmd, Entrypoint: entrypoint });
  return runToEnd(container);
}

interface Server {
  base: string;
  port: (containerPort: number) => number;
  logs: () => Promise<string>;
  remove: () => Promise<void>;
}

// A serving ERP container (the test's odoo.conf, ARGS after `odoo`), once /web/health answers.
async function startServer(args: string[], addonsDir: string, image = ERP_IMAGE): Promise<Server> {
  const container = await docker.createContainer({
    Image: image,
    Labels: labels,
    Cmd: ["odoo", ...args],
    ExposedPorts: { "8069/tcp": {}, "8072/tcp": {} },
    HostConfig: {
      NetworkMode: names.network,
      Binds: [`${join(workDir, "odoo.conf")}:/etc/odoo/odoo.conf:ro`, `${addonsDir}:/mnt/extra-addons:ro`],
      PortBindings: {
        "8069/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }],
        "8072/tcp": [{ HostIp: "127.0.0.1", HostPort: "" }],
      },
    },
  });
  const logs = async (): Promise<string> => demux(await container.logs({ stdout: true, stderr: true }));
  await container.start();
  const ports = (await container.inspect()).NetworkSettings.Ports;
  const port = (p: number): number => Number(ports[`${p}/tcp`]?.[0]?.HostPort ?? 0);
  const base = `http://127.0.0.1:${port(8069)}`;
  try {
    await waitUntil(
      `${image} ${args.join(" ")}: /web/health`,
      async () => (await fetch(`${base}/web/health`, { signal: AbortSignal.timeout(3_000) }).catch(() => undefined))?.status === 200,
      { timeoutMs: 40_000, intervalMs: 250, detail: logs },
    );
  } catch (err) {
    await container.remove({ force: true, v: true });
    throw err;
  }
  return { base, port, logs, remove: () => container.remove({ force: true, v: true }) };
}

// One psql query in the PostgreSQL container, rows as `a|b|c` lines.
async function psql(database: string, query: string): Promise<string> {
  if (!pg) throw new Error("no postgres container");
  const r = await exec(pg, ["psql", "-U", "odoo", "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", query]);
  if (r.code !== 0) throw new Error(`psql ${query}: ${r.stderr}`);
  return r.stdout.trim();
}

// A module folder as Odoo finds one in the add-ons path: __manifest__.py and maybe more files.
async function writeModule(
  addonsDir: string,
  name: string,
  version: string,
  files: Record<string, string> = {},
  depends: string[] = ["base"],
): Promise<void> {
  const dir = join(addonsDir, name);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const deps = depends.map((d) => `'${d}'`).join(", ");
  await writeFile(
    join(dir, "__manifest__.py"),
    `# -*- coding: utf-8 -*-\n{\n    'name': '${name}',\n    "version": '${version}',\n    'depends': [${deps}],\n    'license': 'LGPL-3',\n}\n`,
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
    for (const tag of [PG_IMAGE, ...Object.keys(ERP_TAGS).map(erpImage)]) {
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

    // 17.0 ignores db_server_status (it exists from 18.0).
    const db = await http("/web/health?db_server_status=1");
    expect(db.status).toBe(200);
    expect(await db.json()).toEqual({ status: "pass" });
    expect((await http("/")).status).toBe(200);
    expect((await http("/web/login")).status).toBe(200);
  }, 60_000);

  it("records base in ir_module_module on first start, with demo data by default, and admin_passwd only as set", async () => {
    const res = await http("/berth/modules");
    expect(res.status).toBe(200);
    expect((await res.json()) as ModuleRow[]).toEqual(
      byName([{ name: "base", state: "installed", latest_version: "17.0.1.3", demo: true }, ...uninstalledRows(STANDARD_UNINSTALLED)]),
    );
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

    // 400 when the upgrade or the key is missing (on http_port too: the handshake is checked first).
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
    const closing = await wsSession(`ws://127.0.0.1:${erpWsPort}/websocket`, { onMessage: (ws) => ws.close(1000) });
    expect(closing.messages).toHaveLength(1);
    expect(closing.close.code).toBe(1000);
  }, 40_000);

  it("with workers, refuses the websocket upgrade on http_port as Odoo does (500, Couldn't bind the websocket); with workers = 0 it upgrades there", async () => {
    // The shared odoo.conf has workers = 2: the HTTP workers cannot upgrade (addons/bus/websocket.py).
    const refused = await rawExchange(
      erpPort(),
      "GET /websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    expect(refused.head).toMatch(/^HTTP\/1\.1 500 /);
    const logs = demux(await (erp as Container).logs({ stdout: true, stderr: true }));
    expect(logs).toMatch(/ERROR \S+ odoo\.http: Exception during request handling\.\n/);
    expect(logs).toContain("RuntimeError: Couldn't bind the websocket. Is the connection opened on the evented port (8072)?");

    const threaded = await startServer(["--workers=0"], join(workDir, "addons-v1"));
    try {
      const session = await wsSession(`${threaded.base.replace("http:", "ws:")}/websocket`, {
        onMessage: (ws) => ws.close(1000),
      });
      expect(session.messages).toHaveLength(1);
      expect(JSON.parse(session.messages[0] ?? "")).toMatchObject({ port: 8069, path: "/websocket" });
      expect(session.close.code).toBe(1000);
    } finally {
      await threaded.remove();
    }
  }, 60_000);

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

  it("reports the database as down while PostgreSQL does not answer, with ?db_server_status=1 from 18.0 only", async () => {
    if (!pg) throw new Error("no postgres container");
    const s18 = await startServer([], join(workDir, "addons-v1"), erpImage("18.0"));
    try {
      const up = await fetch(`${s18.base}/web/health?db_server_status=1`, { signal: AbortSignal.timeout(10_000) });
      expect(await up.json()).toEqual({ status: "pass", db_server_status: true });
      // Paused rather than stopped: the name `db` keeps resolving, so nothing asks DNS outside.
      await pg.pause();
      try {
        const plain = await http("/web/health");
        expect(plain.status).toBe(200);
        // 17.0 ignores the parameter: still pass.
        const ignored = await http("/web/health?db_server_status=1");
        expect(ignored.status).toBe(200);
        expect(await ignored.json()).toEqual({ status: "pass" });
        const db = await fetch(`${s18.base}/web/health?db_server_status=1`, { signal: AbortSignal.timeout(15_000) });
        expect(db.status).toBe(500);
        expect(await db.json()).toEqual({ status: "fail", db_server_status: false });
      } finally {
        await pg.unpause();
      }
    } finally {
      await s18.remove();
    }
  }, 90_000);

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
      // odoo/cli/server.py creates it without a log line (exp_create_database's is the web manager's).
      expect(run.logs).not.toMatch(/Create database/);
      expect(run.logs).toMatch(/INFO modules_db odoo\.modules\.loading: Loading module base \(1\/1\)\n/);
      expect(run.logs).toMatch(/INFO \S+ odoo\.service\.server: Initiating shutdown\n/);
      // Created as _create_empty_database does: collation C, pg_trgm.
      expect(await psql("postgres", "SELECT datcollate FROM pg_database WHERE datname = 'modules_db'")).toBe("C");
      expect(await psql(db, "SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'")).toBe("pg_trgm");
      expect(run.logs).not.toMatch(/HTTP service/);
      // The add-ons path was scanned (update_list): my_module is known, not installed, as are
      // the image's standard add-ons.
      expect(await psql(db, "SELECT name, state, coalesce(latest_version, '-'), demo FROM ir_module_module ORDER BY name")).toBe(
        ["base|installed|17.0.1.3|f", ...[...STANDARD_UNINSTALLED, "my_module"].sort().map((m) => `${m}|uninstalled|-|f`)].join("\n"),
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
      expect(run.logs).toMatch(/INFO modules_db odoo\.modules\.loading: Loading module my_module \(2\/2\)\n/);
      expect(run.logs).toMatch(/INFO modules_db odoo\.modules\.loading: loading my_module\/berth_upgrade\.sql\n/);
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
      // Real Odoo prints no "Failed to upgrade module" line: the states are reset, the registry
      // fails, and preload_registries logs CRITICAL with the traceback.
      expect(run.logs).not.toMatch(/Failed to (upgrade|install) module/);
      expect(run.logs).toMatch(
        /WARNING modules_db odoo\.modules\.loading: Transient module states were reset\n.*ERROR modules_db odoo\.modules\.registry: Failed to load registry\n.*CRITICAL modules_db odoo\.service\.server: Failed to initialize database `modules_db`\.\nTraceback \(most recent call last\):\n/,
      );
      expect(run.logs).toMatch(/\nException: berth stand-in: \/mnt\/extra-addons\/bad_module\/FAIL_UPGRADE makes module bad_module fail after its changes were committed\n/);
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
      expect(broken.logs).toMatch(/\npsycopg2\.errors\.UndefinedColumn: column "no_such_column" does not exist\n/);
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
        expect((await res.json()) as ModuleRow[]).toEqual(
          byName([
            { name: "bad_module", state: "installed", latest_version: "17.0.1.0", demo: false },
            { name: "base", state: "installed", latest_version: "17.0.1.3", demo: false },
            { name: "demo_module", state: "uninstalled", latest_version: null, demo: false },
            { name: "my_module", state: "installed", latest_version: "17.0.1.2", demo: false },
            ...uninstalledRows(STANDARD_UNINSTALLED),
          ]),
        );
        const logs = await logsOf(server);
        expect(logs).toMatch(/CRITICAL modules_db odoo\.service\.server: Failed to initialize database `modules_db`\./);
        // The next request loads the registry without the upgrade (states were reset): it works.
        expect((await fetch(`${base}/web/login`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
        expect(await psql(db, "SELECT count(*) FROM bad_module_half")).toBe("2");
      } finally {
        await server.remove({ force: true, v: true });
      }
    }, 90_000);
  });

  describe("strict like real Odoo, per series", () => {
    const addons = (): string => join(workDir, "addons-strict");

    it("has the official image's user per tag and reports its series", async () => {
      for (const [series, ids] of Object.entries(ERP_TAGS)) {
        const uid = await runBare(erpImage(series), ["-u", "odoo"], ["id"]);
        const gid = await runBare(erpImage(series), ["-g", "odoo"], ["id"]);
        expect([uid.stdout.trim(), gid.stdout.trim()], series).toEqual([String(ids.uid), String(ids.gid)]);
        const version = await runBare(erpImage(series), ["--version"]);
        expect(version.stdout, series).toBe(`Odoo Server ${series}\n`);
        const env = (await docker.getImage(erpImage(series)).inspect()).Config.Env ?? [];
        expect(env, series).toContain(`ODOO_VERSION=${series}`);
      }
    }, 90_000);

    it("exits as optparse does on an unknown or malformed option (usage, error, exit 2)", async () => {
      const unknown = await runBare(erpImage("17.0"), ["odoo", "--no-such-option"]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe("Usage: odoo [options]\n\nodoo: error: no such option: --no-such-option\n");
      const short = await runBare(erpImage("16.0"), ["-q"]);
      expect([short.code, short.stderr]).toEqual([2, "Usage: odoo [options]\n\nodoo: error: no such option: -q\n"]);
      // 18.0+: odoo/cli/server.py names the parser "odoo server".
      const s18 = await runBare(erpImage("18.0"), ["--no-such-option"]);
      expect(s18.stderr).toBe("Usage: odoo server [options]\n\nodoo server: error: no such option: --no-such-option\n");
      // Through the entrypoint `-d` would take the appended `--db_host` (as in the official
      // image): the binary itself shows the parser's error.
      const missing = await runBare(erpImage("17.0"), ["-d"], ["/usr/bin/odoo"]);
      expect([missing.code, missing.stderr.split("\n")[2]]).toEqual([2, "odoo: error: -d option requires 1 argument"]);
      const notInt = await runBare(erpImage("17.0"), ["--http-port=x"]);
      expect(notInt.stderr.split("\n")[2]).toBe("odoo: error: option --http-port: invalid integer value: 'x'");
      const flagValue = await runBare(erpImage("17.0"), ["--stop-after-init=1"]);
      expect(flagValue.stderr.split("\n")[2]).toBe("odoo: error: --stop-after-init option does not take a value");
      // Demo options per series: --with-demo exists from 19.0 only, and takes no value.
      for (const series of ["16.0", "17.0", "18.0"]) {
        const r = await runBare(erpImage(series), ["--with-demo"]);
        expect([r.code, r.stderr.split("\n")[2]], series).toEqual([2, `${series === "18.0" ? "odoo server" : "odoo"}: error: no such option: --with-demo`]);
      }
      const withValue = await runBare(erpImage("19.0"), ["--with-demo=all"]);
      expect([withValue.code, withValue.stderr.split("\n")[2]]).toEqual([2, "odoo server: error: --with-demo option does not take a value"]);
      // 19.0 refuses positional leftovers; 16.0-18.0 ignore them.
      const leftover = await runBare(erpImage("19.0"), ["--stop-after-init", "stray"]);
      expect(leftover.stderr.split("\n")[2]).toBe("odoo server: error: unrecognized parameters: stray");
    }, 90_000);

    it("demo data: on by default in 16.0-18.0, off in 19.0 (--with-demo); --without-demo=all only warns in 19.0", async () => {
      await mkdir(addons(), { recursive: true, mode: 0o755 });
      await writeModule(addons(), "strict_demo", "1.0");
      const demoOf = async (database: string) =>
        psql(database, "SELECT name || ':' || demo FROM ir_module_module WHERE state = 'installed' ORDER BY name");
      const r18 = await runOdoo(["-d", "demo18", "-i", "strict_demo", "--stop-after-init"], addons(), erpImage("18.0"));
      expect(r18.code, r18.logs).toBe(0);
      expect(await demoOf("demo18")).toBe("base:true\nstrict_demo:true");
      const r18off = await runOdoo(["-d", "demo18off", "--without-demo=all", "-i", "strict_demo", "--stop-after-init"], addons(), erpImage("18.0"));
      expect(r18off.code, r18off.logs).toBe(0);
      expect(await demoOf("demo18off")).toBe("base:false\nstrict_demo:false");
      const r19 = await runOdoo(["-d", "demo19", "-i", "strict_demo", "--stop-after-init"], addons(), erpImage("19.0"));
      expect(r19.code, r19.logs).toBe(0);
      expect(await demoOf("demo19")).toBe("base:false\nstrict_demo:false");
      const r19on = await runOdoo(["-d", "demo19on", "--with-demo", "-i", "strict_demo", "--stop-after-init"], addons(), erpImage("19.0"));
      expect(r19on.code, r19on.logs).toBe(0);
      expect(await demoOf("demo19on")).toBe("base:true\nstrict_demo:true");
      const r19all = await runOdoo(["-d", "demo19all", "--without-demo=all", "-i", "base", "--stop-after-init"], addons(), erpImage("19.0"));
      expect(r19all.code, r19all.logs).toBe(0);
      expect(r19all.logs).toMatch(/WARNING \S+ odoo\.tools\.config: option --without-demo: since 19\.0, invalid boolean value: 'all', assume True\n/);
    }, 120_000);

    it("reads depends: -u upgrades the installed modules depending on it, in dependency order", async () => {
      await writeModule(addons(), "strict_a", "1.0");
      await writeModule(addons(), "strict_b", "1.0", {}, ["base", "strict_a"]);
      await writeModule(addons(), "strict_c", "1.0", {}, ["strict_b"]);
      await writeModule(addons(), "strict_other", "1.0");
      // Installing c installs its dependencies first.
      const inst = await runOdoo(["-d", "deps_db", "-i", "strict_c,strict_other", "--stop-after-init"], addons(), erpImage("17.0"));
      expect(inst.code, inst.logs).toBe(0);
      const order = [...inst.logs.matchAll(/Loading module (\w+) \(\d+\/\d+\)/g)].map((m) => m[1]);
      expect(order).toEqual(["base", "strict_a", "strict_other", "strict_b", "strict_c"]);
      for (const m of ["strict_a", "strict_b", "strict_c", "strict_other"]) await writeModule(addons(), m, "1.1", {}, m === "strict_b" ? ["base", "strict_a"] : m === "strict_c" ? ["strict_b"] : ["base"]);
      const up = await runOdoo(["-d", "deps_db", "-u", "strict_a", "--stop-after-init"], addons(), erpImage("17.0"));
      expect(up.code, up.logs).toBe(0);
      expect([...up.logs.matchAll(/Loading module (\w+) \((\d+)\/(\d+)\)/g)].map((m) => `${m[1] ?? ""} ${m[2] ?? ""}/${m[3] ?? ""}`)).toEqual([
        "strict_a 2/5",
        "strict_b 4/5",
        "strict_c 5/5",
      ]);
      expect(await psql("deps_db", "SELECT name || ' ' || latest_version FROM ir_module_module WHERE name LIKE 'strict_%' AND state = 'installed' ORDER BY name")).toBe(
        "strict_a 17.0.1.1\nstrict_b 17.0.1.1\nstrict_c 17.0.1.1\nstrict_other 17.0.1.0",
      );
    }, 90_000);

    it("runs a module's tests with --test-enable and --test-tags as Odoo prints them, exit code 1 when one did not pass (erp/tests.c)", async () => {
      const testFile = [
        "from odoo.tests import TransactionCase",
        "",
        "",
        "class TestThings(TransactionCase):",
        "",
        "    def test_passes(self):",
        "        self.assertTrue(True)",
        "",
        "    def test_fails(self):",
        "        self.assertEqual(1, 2)  # stand-in: fail AssertionError: 1 != 2",
        "",
        "    def test_errors(self):",
        '        raise ValueError("boom")  # stand-in: error ValueError: boom',
        "",
      ].join("\n");
      await writeModule(addons(), "strict_tested", "1.0");
      await mkdir(join(addons(), "strict_tested", "tests"), { recursive: true, mode: 0o755 });
      await writeFile(join(addons(), "strict_tested", "tests", "__init__.py"), "from . import test_things\n", { mode: 0o644 });
      await writeFile(join(addons(), "strict_tested", "tests", "test_things.py"), testFile, { mode: 0o644 });
      for (const series of ["16.0", "19.0"]) {
        const db = `tested_${series.slice(0, 2)}`;
        const run = await runOdoo(["-d", db, "-i", "strict_tested", "--test-enable", "--test-tags=/strict_tested", "--stop-after-init"], addons(), erpImage(series));
        // odoo/service/server.py preload_registries: rc += 1 when the report is not successful; the module is installed all the same.
        expect(run.code, run.logs).toBe(1);
        expect(await psql(db, "SELECT state FROM ir_module_module WHERE name = 'strict_tested'")).toBe("installed");
        const log = moduleTestLog();
        for (const line of run.logs.split("\n")) log.line(line);
        expect(log.reported()).toBe(true);
        expect(log.result()).toMatchObject({ run: 3, failed: 1, errors: 1, failures: [{ test: "TestThings.test_errors", kind: "error" }, { test: "TestThings.test_fails", kind: "failure" }] });
        expect(run.logs).toMatch(/ INFO tested_\d+ odoo\.addons\.strict_tested\.tests\.test_things: Starting TestThings\.test_passes \.\.\.\n/);
        expect(run.logs).toContain('  File "/mnt/extra-addons/strict_tested/tests/test_things.py", line 10, in test_fails\n    self.assertEqual(1, 2)\nAssertionError: 1 != 2\n');
        expect(run.logs).toMatch(/ ERROR tested_\d+ odoo\.modules\.loading: Module strict_tested: 1 failures, 1 errors of 3 tests\n/);
        expect(run.logs).toMatch(new RegExp(` ERROR ${db} odoo\\.tests\\.result: 1 failed, 1 error\\(s\\) of 3 tests when loading database '${db}'\\n`));
      }
      // --test-tags selects (tag_selector.py's /module:Class.method); the passing test alone: INFO report, exit code 0.
      const one = await runOdoo(["-d", "tested_one", "-i", "strict_tested", "--test-enable", "--test-tags=/strict_tested:TestThings.test_passes", "--stop-after-init"], addons(), erpImage("17.0"));
      expect(one.code, one.logs).toBe(0);
      expect(one.logs).toMatch(/ INFO tested_one odoo\.tests\.result: 0 failed, 0 error\(s\) of 1 tests when loading database 'tested_one'\n/);
      // Without --test-enable no test runs and nothing is reported.
      const none = await runOdoo(["-d", "tested_none", "-i", "strict_tested", "--stop-after-init"], addons(), erpImage("17.0"));
      expect(none.code, none.logs).toBe(0);
      expect(none.logs).not.toContain("Starting TestThings");
      expect(none.logs).not.toContain("odoo.tests.result");
    }, 120_000);

    it("adapts manifest versions as each branch's adapt_version does", async () => {
      const dir = join(workDir, "addons-versions");
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const cases: [string, string, string][] = [
        // series, manifest version, ir_module_module after -i (state latest_version)
        ["16.0", "16.0", "installed 16.0.16.0"],
        ["17.0", "17.0", "installed 17.0.17.0"],
        ["17.0", "2.5", "installed 17.0.2.5"],
        ["17.0", "17.0.1.0", "installed 17.0.1.0"],
        ["18.0", "18.0", "uninstallable -"],
        ["18.0", "1.2.3.4", "installed 18.0.1.2.3.4"],
        ["18.0", "18.0.1.0", "installed 18.0.1.0"],
        ["19.0", "1.2.3.4", "uninstallable -"],
        ["19.0", "19.0.1.2.3", "installed 19.0.1.2.3"],
        ["19.0", "2.5", "installed 19.0.2.5"],
      ];
      for (const [i, [series, version, expected]] of cases.entries()) {
        const database = `versions_${i}`;
        await rm(join(dir, "strict_v"), { recursive: true, force: true });
        await writeModule(dir, "strict_v", version);
        const r = await runOdoo(["-d", database, "-i", "strict_v", "--stop-after-init"], dir, erpImage(series));
        expect(r.code, `${series} ${version}: ${r.logs}`).toBe(0);
        expect(await psql(database, "SELECT state || ' ' || coalesce(latest_version, '-') FROM ir_module_module WHERE name = 'strict_v'"), `${series} ${version}`).toBe(expected);
        if (expected.startsWith("uninstallable")) expect(r.logs).toMatch(/WARNING \S+ odoo\.modules\.module: The module strict_v has an incompatible version, setting installable=False\n/);
      }
      // 18.0+: a version that is not numbers fails the loading ("invalid manifest").
      await rm(join(dir, "strict_v"), { recursive: true, force: true });
      await writeModule(dir, "strict_v", "1.x");
      const bad = await runOdoo(["-d", "versions_bad", "-i", "base", "--stop-after-init"], dir, erpImage("18.0"));
      expect(bad.code, bad.logs).toBe(255);
      expect(bad.logs).toMatch(/\nValueError: Module strict_v: invalid manifest\n/);
    }, 180_000);

    it("BERTH_FAIL_HEALTH: the registry fails (Couldn't load module), /web/health passes, /web/login answers 500", async () => {
      const dir = join(workDir, "addons-failhealth");
      await mkdir(dir, { recursive: true, mode: 0o755 });
      await writeModule(dir, "strict_broken", "1.0");
      const inst = await runOdoo(["-d", "failhealth_db", "-i", "strict_broken", "--stop-after-init"], dir);
      expect(inst.code, inst.logs).toBe(0);
      await writeFile(join(dir, "strict_broken", "BERTH_FAIL_HEALTH"), "");
      const server = await startServer(["-d", "failhealth_db"], dir);
      try {
        const health = await fetch(`${server.base}/web/health`, { signal: AbortSignal.timeout(10_000) });
        expect([health.status, await health.text()]).toEqual([200, '{"status": "pass"}']);
        for (const path of ["/web/login", "/web", "/"]) {
          const res = await fetch(`${server.base}${path}`, { signal: AbortSignal.timeout(10_000) });
          expect(res.status, path).toBe(500);
        }
        const logs = await server.logs();
        expect(logs).toMatch(
          /CRITICAL failhealth_db odoo\.modules\.module: Couldn't load module strict_broken\n.*CRITICAL failhealth_db odoo\.modules\.module: berth stand-in: .*\n.*WARNING failhealth_db odoo\.modules\.loading: Transient module states were reset\n.*ERROR failhealth_db odoo\.modules\.registry: Failed to load registry\n.*CRITICAL failhealth_db odoo\.service\.server: Failed to initialize database `failhealth_db`\.\nTraceback/,
        );
        expect(logs).toMatch(/\nImportError: berth stand-in: \/mnt\/extra-addons\/strict_broken\/BERTH_FAIL_HEALTH makes module strict_broken fail to import\n/);
      } finally {
        await server.remove();
      }
      // With --stop-after-init the same start exits 255; at an add-ons root the hook breaks base.
      const stopped = await runOdoo(["-d", "failhealth_db", "--stop-after-init"], dir);
      expect(stopped.code, stopped.logs).toBe(255);
      await rm(join(dir, "strict_broken", "BERTH_FAIL_HEALTH"));
      await writeFile(join(dir, "BERTH_FAIL_HEALTH"), "");
      const root = await runOdoo(["-d", "failhealth_db", "--stop-after-init"], dir, erpImage("19.0"));
      expect(root.code, root.logs).toBe(255);
      expect(root.logs).toMatch(/CRITICAL failhealth_db odoo\.modules\.module: Couldn't load module base\n/);
      expect(root.logs).toMatch(/ERROR failhealth_db odoo\.registry: Failed to load registry\n/);
    }, 120_000);

    it("serves a database whose installed modules' code is missing (Enterprise on Community), logging them as Odoo does", async () => {
      const dir = join(workDir, "addons-enterprise");
      await mkdir(dir, { recursive: true, mode: 0o755 });
      await writeModule(dir, "web_studio", "1.0");
      const inst = await runOdoo(["-d", "enterprise_db", "-i", "web_studio", "--stop-after-init"], dir);
      expect(inst.code, inst.logs).toBe(0);
      // The Community image: the module is installed in the database, its code is not there.
      await rm(join(dir, "web_studio"), { recursive: true });
      const server = await startServer(["-d", "enterprise_db"], dir);
      try {
        expect((await fetch(`${server.base}/web/health`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
        expect((await fetch(`${server.base}/web/login`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
        expect(await server.logs()).toMatch(/ERROR enterprise_db odoo\.modules\.loading: Some modules are not loaded, some dependencies or manifest may be missing: \['web_studio'\]\n/);
      } finally {
        await server.remove();
      }
    }, 90_000);

    it("does not initialise an existing empty database without -i: logs as Odoo, /web/login 500, health 200", async () => {
      await psql("postgres", "CREATE DATABASE strict_empty");
      const dir = join(workDir, "addons-v1");
      const once = await runOdoo(["-d", "strict_empty", "--stop-after-init"], dir);
      expect(once.code, once.logs).toBe(0);
      expect(once.logs).toMatch(/ERROR strict_empty odoo\.modules\.loading: Database strict_empty not initialized, you can force it with `-i base`\n/);
      expect(await psql("strict_empty", "SELECT count(*) FROM pg_tables WHERE tablename = 'ir_module_module'")).toBe("0");
      const server = await startServer(["-d", "strict_empty"], dir);
      try {
        expect((await fetch(`${server.base}/web/login`, { signal: AbortSignal.timeout(10_000) })).status).toBe(500);
      } finally {
        await server.remove();
      }
      const forced = await runOdoo(["-d", "strict_empty", "-i", "base", "--stop-after-init"], dir);
      expect(forced.code, forced.logs).toBe(0);
      expect(await psql("strict_empty", "SELECT state FROM ir_module_module WHERE name = 'base'")).toBe("installed");
    }, 90_000);
  });

  describe("odoo neutralize with the standard add-ons, per series", () => {
    const STANDARD = ["base", "web", "mail", "payment", "iap", "delivery", "google_calendar", "microsoft_calendar"];
    const addons = (): string => join(workDir, "addons-neutralize");
    const neutralize = (series: string, args: string[]) => runCommand(erpImage(series), ["odoo", "neutralize", ...args], addons());
    const LOG = (level: string, logger: string, text: string) =>
      new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d,\\d{3} \\d+ ${level} \\? ${logger.replace(/\./g, "\\.")}: ${text}$`, "m");

    // What each module's data/neutralize.sql turns off, as a test reads it (one value per line).
    const state = async (db: string, series: string): Promise<Record<string, string>> => {
      const major = Number(series.split(".")[0]);
      const q = (sql: string) => psql(db, sql);
      const calendars =
        major <= 17
          ? {
              google: await q("SELECT coalesce(calendar_token, '-') || ' ' || coalesce(calendar_rtoken, '-') || ' ' || synchronization_stopped FROM google_calendar_credentials c JOIN res_users u ON u.google_cal_account_id = c.id WHERE u.id = 2"),
              microsoft:
                major === 16
                  ? await q("SELECT coalesce(microsoft_calendar_token, '-') || ' ' || coalesce(microsoft_calendar_rtoken, '-') || ' ' || microsoft_synchronization_stopped FROM res_users WHERE id = 2")
                  : await q("SELECT coalesce(u.microsoft_calendar_token, '-') || ' ' || coalesce(u.microsoft_calendar_rtoken, '-') || ' ' || c.synchronization_stopped FROM res_users u JOIN microsoft_calendar_credentials c ON c.id = u.microsoft_cal_account_id WHERE u.id = 2"),
            }
          : {
              google: await q("SELECT coalesce(google_calendar_token, '-') || ' ' || coalesce(google_calendar_rtoken, '-') || ' ' || google_synchronization_stopped FROM res_users_settings WHERE user_id = 2"),
              microsoft: await q("SELECT coalesce(u.microsoft_calendar_token, '-') || ' ' || coalesce(u.microsoft_calendar_rtoken, '-') || ' ' || s.microsoft_synchronization_stopped FROM res_users u JOIN res_users_settings s ON s.user_id = u.id WHERE u.id = 2"),
            };
      return {
        crons: await q("SELECT string_agg(cron_name || ':' || active, ',' ORDER BY id) FROM ir_cron"),
        mailServers: await q("SELECT string_agg(name || ':' || coalesce(smtp_host, '') || ':' || smtp_port || ':' || active, ',' ORDER BY id) FROM ir_mail_server"),
        neutralized: await q("SELECT coalesce((SELECT value FROM ir_config_parameter WHERE key = 'database.is_neutralized'), '-')"),
        webhook: major >= 17 ? await q("SELECT webhook_url FROM ir_act_server WHERE state = 'webhook'") : "-",
        banner: await q("SELECT active::text FROM ir_ui_view WHERE key = 'web.neutralize_banner'"),
        template: await q("SELECT coalesce(mail_server_id::text, '-') FROM mail_template"),
        fetchmail: await q("SELECT string_agg(name || ':' || active, ',') FROM fetchmail_server"),
        providers: await q("SELECT string_agg(code || ':' || state, ',' ORDER BY id) FROM payment_provider"),
        iap: await q("SELECT account_token FROM iap_account"),
        carriers: await q("SELECT string_agg(delivery_type || ':' || prod_environment || ':' || active, ',' ORDER BY id) FROM delivery_carrier"),
        ...calendars,
      };
    };

    beforeAll(async () => {
      await mkdir(addons(), { recursive: true, mode: 0o755 });
    });

    it("-i base makes base's tables and rows; the image's standard add-ons are listed, uninstalled", async () => {
      const run = await runOdoo(["-d", "std_base", "-i", "base", "--stop-after-init"], addons(), erpImage("16.0"));
      expect(run.code, run.logs).toBe(0);
      expect(run.logs).toMatch(/INFO std_base odoo\.modules\.loading: loading base\/berth_upgrade\.sql\n/);
      expect(await psql("std_base", "SELECT name || ':' || state FROM ir_module_module ORDER BY name")).toBe(
        STANDARD.slice()
          .sort()
          .map((m) => `${m}:${m === "base" ? "installed" : "uninstalled"}`)
          .join("\n"),
      );
      expect(await psql("std_base", "SELECT string_agg(c.cron_name || ':' || c.active, ',' ORDER BY c.id) FROM ir_cron c")).toBe(
        "Base: Auto-vacuum internal data:true,Base: Portal Users Deletion:true",
      );
      expect(await psql("std_base", "SELECT res_id FROM ir_model_data WHERE module = 'base' AND name = 'autovacuum_job' AND model = 'ir.cron'")).toBe("1");
      expect(await psql("std_base", "SELECT string_agg(key, ',' ORDER BY key) FROM ir_config_parameter")).toBe(
        "base.login_cooldown_after,base.login_cooldown_duration,database.create_date,database.secret,database.uuid,web.base.url",
      );
      expect(await psql("std_base", "SELECT name || ' ' || smtp_host || ' ' || active FROM ir_mail_server")).toBe("Production SMTP smtp.customer.example true");
      expect(await psql("std_base", "SELECT login FROM res_users ORDER BY id")).toBe("__system__\nadmin");
      expect(await psql("std_base", "SELECT note FROM berth_probe")).toBe("created on first start");
      // 16.0 has no webhook server actions; a base upgrade keeps everything once.
      expect(await psql("std_base", "SELECT count(*) FROM information_schema.columns WHERE table_name = 'ir_act_server' AND column_name = 'webhook_url'")).toBe("0");
      const up = await runOdoo(["-d", "std_base", "-u", "base", "--stop-after-init"], addons(), erpImage("16.0"));
      expect(up.code, up.logs).toBe(0);
      expect(await psql("std_base", "SELECT (SELECT count(*) FROM ir_cron) || ' ' || (SELECT count(*) FROM ir_mail_server) || ' ' || (SELECT count(*) FROM ir_config_parameter)")).toBe("2 1 6");
    }, 60_000);

    for (const series of Object.keys(ERP_TAGS)) {
      const major = Number(series.split(".")[0]);
      it(`${series}: turns off what each module's neutralize.sql turns off; --stdout prints and applies nothing; twice is fine`, async () => {
        const db = `neutral_${String(major)}`;
        const install = await runOdoo(["-d", db, "-i", STANDARD.join(","), "--stop-after-init"], addons(), erpImage(series));
        expect(install.code, install.logs).toBe(0);
        expect(await psql(db, "SELECT string_agg(name, ',' ORDER BY name) FROM ir_module_module WHERE state = 'installed'")).toBe(STANDARD.slice().sort().join(","));
        const before = await state(db, series);
        expect(before).toEqual({
          crons: "Base: Auto-vacuum internal data:true,Base: Portal Users Deletion:true",
          mailServers: "Production SMTP:smtp.customer.example:587:true",
          neutralized: "-",
          webhook: major >= 17 ? "https://hooks.customer.example/orders" : "-",
          banner: "false",
          template: "1",
          fetchmail: "Support mailbox:true",
          providers: "stripe:enabled,demo:test",
          iap: "0123456789abcdef0123456789abcdef",
          carriers: "fedex:true:true,fixed:true:true",
          google: "google-access-token google-refresh-token false",
          microsoft: "microsoft-access-token microsoft-refresh-token false",
        });

        // --stdout: the SQL in one transaction, nothing applied, no log line.
        const printed = await neutralize(series, ["-d", db, "--stdout"]);
        expect(printed.code, printed.stderr).toBe(0);
        expect(printed.stderr).toBe("");
        expect(printed.stdout.startsWith("BEGIN;\n")).toBe(true);
        expect(printed.stdout.endsWith(";\nCOMMIT;\n")).toBe(true);
        for (const table of ["ir_mail_server", "ir_cron", "ir_ui_view", "mail_template", "payment_provider", "iap_account", "delivery_carrier"]) {
          expect(printed.stdout, table).toContain(`UPDATE ${table}`);
        }
        expect(printed.stdout.includes("UPDATE ir_act_server"), "webhooks from 17.0").toBe(major >= 17);
        expect(await state(db, series)).toEqual(before);

        const run = await neutralize(series, ["-d", db]);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toBe("");
        expect(run.stderr).toMatch(LOG("INFO", "odoo.cli.neutralize", `Starting ${db} database neutralization`));
        expect(run.stderr).toMatch(LOG("INFO", "odoo.modules.neutralize", "Neutralization finished"));
        expect(run.stderr.trim().split("\n")).toHaveLength(2);
        const dummy = "neutralization - disable emails:invalid:1025:true";
        const after = {
          crons: "Base: Auto-vacuum internal data:true,Base: Portal Users Deletion:false",
          mailServers: `Production SMTP:smtp.customer.example:587:false,${dummy}`,
          neutralized: "true",
          webhook: major >= 17 ? "neutralization - disable webhook" : "-",
          banner: "true",
          template: "-",
          fetchmail: "Support mailbox:false",
          providers: "stripe:disabled,demo:test",
          iap: "0123456789abcdef0123456789abcdef+disabled",
          // 16.0/17.0 also archive the carriers of external providers (odoo/odoo PR 161182).
          carriers: major <= 17 ? "fedex:false:false,fixed:false:true" : "fedex:false:true,fixed:false:true",
          google: "- - true",
          microsoft: "- - true",
        };
        expect(await state(db, series)).toEqual(after);
        // mail's web push (17.0+): keys and devices are gone.
        if (major >= 17) {
          expect(await psql(db, "SELECT count(*) FROM ir_config_parameter WHERE key LIKE 'mail.%'")).toBe("0");
          expect(await psql(db, major === 17 ? "SELECT count(*) FROM mail_partner_device" : "SELECT count(*) FROM mail_push_device")).toBe("0");
        }

        // Again: the same, the first dummy mail server turned off with the others and a new
        // one added (base's INSERT has no guard).
        const again = await neutralize(series, ["-d", db]);
        expect(again.code, again.stderr).toBe(0);
        expect(await state(db, series)).toEqual({
          ...after,
          mailServers: `Production SMTP:smtp.customer.example:587:false,${dummy.replace(/true$/, "false")},${dummy}`,
        });
      }, 120_000);
    }

    it("fails as Odoo does: unknown database, no database, a failing statement (nothing applied), an unknown option", async () => {
      const unknown = await neutralize("17.0", ["-d", "no_such_database"]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(LOG("INFO", "odoo.cli.neutralize", "Starting no_such_database database neutralization"));
      expect(unknown.stderr).toMatch(LOG("INFO", "odoo.sql_db", "Connection to the database failed"));
      expect(unknown.stderr).toMatch(LOG("CRITICAL", "odoo.cli.neutralize", "An error occurred during the neutralization\\. THE DATABASE IS NOT NEUTRALIZED!"));
      expect(await psql("postgres", "SELECT count(*) FROM pg_database WHERE datname = 'no_such_database'")).toBe("0");

      // The test's odoo.conf names db_name, so -d is what the command line has to say without it.
      const confless = await runCommand(erpImage("18.0"), ["odoo", "neutralize", "-c", "/dev/null"], addons());
      expect(confless.code).toBe(1);
      expect(confless.stderr).toMatch(LOG("ERROR", "odoo.cli.neutralize", 'Neutralize command needs a database name\\. Use "-d" argument'));

      // A module whose table lost a column: base's statements ran first, all are rolled back.
      const db = "neutral_broken";
      const install = await runOdoo(["-d", db, "-i", "payment", "--stop-after-init"], addons(), erpImage("17.0"));
      expect(install.code, install.logs).toBe(0);
      await psql(db, "ALTER TABLE payment_provider DROP COLUMN state");
      const broken = await neutralize("17.0", ["-d", db]);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(/ERROR \? odoo\.sql_db: bad query: [\s\S]*UPDATE payment_provider\n {3}SET state = 'disabled'\n WHERE state NOT IN \('test', 'disabled'\);\nERROR: column "state" does not exist\n/);
      expect(broken.stderr).toMatch(LOG("CRITICAL", "odoo.cli.neutralize", "An error occurred during the neutralization\\. THE DATABASE IS NOT NEUTRALIZED!"));
      expect(broken.stderr).not.toMatch(/Neutralization finished/);
      expect(await psql(db, "SELECT string_agg(active::text, ',' ORDER BY id) FROM ir_cron")).toBe("true,true");
      expect(await psql(db, "SELECT count(*) FROM ir_config_parameter WHERE key = 'database.is_neutralized'")).toBe("0");

      // The parser is the server's, with --stdout; its name from 18.0 is "odoo neutralize".
      const option = await neutralize("18.0", ["-d", db, "--bogus"]);
      expect([option.code, option.stderr]).toEqual([2, "Usage: odoo neutralize [options]\n\nodoo neutralize: error: no such option: --bogus\n"]);
      const option16 = await neutralize("16.0", ["--bogus"]);
      expect([option16.code, option16.stderr]).toEqual([2, "Usage: odoo [options]\n\nodoo: error: no such option: --bogus\n"]);
      // --stdout belongs to neutralize: the server refuses it.
      const server = await runBare(erpImage("17.0"), ["odoo", "--stdout"]);
      expect([server.code, server.stderr.split("\n")[2]]).toEqual([2, "odoo: error: no such option: --stdout"]);
    }, 120_000);
  });
});
