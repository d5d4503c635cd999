// The arm64 executable, cross-built on this x64 machine (npm run build:agent -- --arch arm64),
// run under qemu-user from an empty directory with an empty environment: it enrols against a
// real control plane, connects, and answers diagnostics through the signed command path
// with its packed SQLite addon and the real Docker engine.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { BuiltExecutable } from "../../installers/build/build-agent.ts";
import { agentExecutableForArch } from "../installers/agent-executable.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { waitUntil } from "../support/wait.ts";

const exec = promisify(execFile);
// qemu-user with the target's loader and libraries from Debian's cross packages.
const QEMU = ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"];

let exe: BuiltExecutable;
let cp: TestControlPlane;
let d: DemoOrganization;
let dir: string;
let bin: string;
let agent: ChildProcess | undefined;
let output = "";

beforeAll(async () => {
  exe = await agentExecutableForArch("arm64");
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  dir = mkdtempSync(path.join(tmpdir(), "berth-agent-arm64-"));
  bin = path.join(dir, "berth-agent");
  copyFileSync(exe.file, bin);
  chmodSync(bin, 0o755);
}, 900_000);

afterAll(async () => {
  if (agent && agent.exitCode === null) {
    agent.kill("SIGTERM");
    await new Promise((r) => agent?.once("exit", r));
  }
  await cp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const runArm = (args: string[], env: Record<string, string> = {}) => exec(QEMU[0]!, [...QEMU.slice(1), bin, ...args], { cwd: dir, env, timeout: 120_000 });

function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 90_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 200, detail: () => `agent output:\n${output.slice(-3000)}` });
}

it("is an aarch64 executable that SHA256SUMS vouches for", async () => {
  const header = readFileSync(bin).subarray(0, 20);
  expect(header.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  expect(header.readUInt16LE(18)).toBe(183); // e_machine EM_AARCH64
  const sums = readFileSync(path.join(path.dirname(exe.file), "SHA256SUMS"), "utf8");
  expect(sums).toContain(`${createHash("sha256").update(readFileSync(bin)).digest("hex")}  berth-agent-linux-arm64\n`);
  expect((await runArm(["--version"])).stdout.trim()).toBe(exe.version);
}, 120_000);

it("enrols, connects and runs diagnostics with its packed SQLite and the real Docker engine", async () => {
  const created = await publicClient(cp.app, d.api_keys.org_rw).post("/servers", { name: "arm-1" });
  expect(created.status).toBe(201);
  const serverId: string = created.body.server.id;
  const base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  const stateDir = path.join(dir, "state");
  const enrolled = await runArm(["enroll", "--url", base, "--state-dir", stateDir], { BERTH_TOKEN: created.body.enrollment.token });
  expect(enrolled.stdout).toContain(`Enrolled as server ${serverId}`);

  agent = spawn(QEMU[0]!, [...QEMU.slice(1), bin, "run", "--state-dir", stateDir], { cwd: dir, env: {}, stdio: ["ignore", "pipe", "pipe"] });
  agent.stdout?.on("data", (c: Buffer) => (output += c.toString()));
  agent.stderr?.on("data", (c: Buffer) => (output += c.toString()));
  await waitFor("the arm64 agent to connect", () => cp.app.gateway.isConnected(serverId));

  const command = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:e2e" });
  const row = async () =>
    (await cp.database.pool.query("select state, result, error from agent_commands where command_id = $1", [command.commandId])).rows[0] as {
      state: string;
      result: Record<string, unknown> | null;
      error: unknown;
    };
  await waitFor("diagnostics to finish", async () => ["succeeded", "failed"].includes((await row()).state));
  const done = await row();
  expect(done.error).toBeNull();
  expect(done.result).toMatchObject({
    agent: { version: exe.version, node_version: expect.stringMatching(/^v24\./) },
    docker: { reachable: true },
    journal: { pending_events: expect.any(Number) },
  });
  const { rows } = await cp.database.pool.query("select arch from servers where id = $1", [serverId]);
  expect(rows[0].arch).toMatch(/arm64|aarch64/);
}, 300_000);
