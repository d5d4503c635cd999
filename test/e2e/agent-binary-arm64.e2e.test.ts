// The arm64 executable, cross-built on this x64 machine (npm run build:agent -- --arch arm64),
// run under qemu-user from an empty directory with an empty environment: it enrols against a
// real control plane, connects, and answers diagnostics through the signed command path
// with its journal on node:sqlite and the real Docker engine.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { BuiltExecutable } from "../../installers/build/build-agent.ts";
import { agentExecutableForArch } from "../installers/agent-executable.ts";
import { executableUnderTest, type ExecutableUnderTest } from "../support/executable-under-test.ts";

// qemu-user with the target's loader and libraries from Debian's cross packages.
const QEMU = ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"];

let exe: BuiltExecutable;
let t: ExecutableUnderTest;

beforeAll(async () => {
  exe = await agentExecutableForArch("arm64");
  t = await executableUnderTest(exe.file, { tmpPrefix: "berth-agent-arm64-", launcher: QEMU, env: () => ({}) });
}, 900_000);

afterAll(async () => t?.close());

it("is an aarch64 executable that SHA256SUMS vouches for", async () => {
  const header = readFileSync(t.bin).subarray(0, 20);
  expect(header.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  expect(header.readUInt16LE(18)).toBe(183); // e_machine EM_AARCH64
  const sums = readFileSync(path.join(path.dirname(exe.file), "SHA256SUMS"), "utf8");
  expect(sums).toContain(`${createHash("sha256").update(readFileSync(t.bin)).digest("hex")}  berth-agent-linux-arm64\n`);
  expect((await t.run(["--version"])).stdout.trim()).toBe(exe.version);
}, 120_000);

it("enrols, connects and runs diagnostics with its SQLite journal and the real Docker engine", async () => {
  const { serverId, token } = await t.newServer("arm-1");
  const stateDir = path.join(t.dir, "state");
  const enrolled = await t.run(["enroll", "--url", t.base, "--state-dir", stateDir], { BERTH_TOKEN: token });
  expect(enrolled.stdout).toContain(`Enrolled as server ${serverId}`);

  const agent = t.daemon(stateDir);
  await agent.waitFor("the arm64 agent to connect", () => t.cp.app.gateway.isConnected(serverId), 90_000);

  const done = await t.diagnostics(serverId, agent, 90_000);
  expect(done.error).toBeNull();
  expect(done.result).toMatchObject({
    agent: { version: exe.version, node_version: expect.stringMatching(/^v24\./) },
    docker: { reachable: true },
    journal: { pending_events: expect.any(Number) },
  });
  const { rows } = await t.cp.database.pool.query("select arch from servers where id = $1", [serverId]);
  expect(rows[0].arch).toMatch(/arm64|aarch64/);
}, 300_000);
