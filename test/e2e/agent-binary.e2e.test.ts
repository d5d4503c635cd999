// End to end with the agent as it ships: the single executable (npm run build:agent),
// copied to a directory with no node_modules, run with an empty environment (no Node on the
// PATH either), enrolled against a real control plane that also serves the executable and
// the installers, and asked for diagnostics through the signed command path.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { BuiltExecutable } from "../../installers/build/build-agent.ts";
import { agentExecutable } from "../installers/agent-executable.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { waitUntil } from "../support/wait.ts";

const exec = promisify(execFile);

let exe: BuiltExecutable;
let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;
let dir: string;
let bin: string;
let agent: ChildProcess | undefined;
let output = "";

// Nothing from this environment: a PATH on which there is nothing at all (so no Node either).
const CLEAN_ENV: Record<string, string> = {};
const SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

beforeAll(async () => {
  exe = await agentExecutable();
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  const address = cp.app.server.address();
  if (address === null || typeof address !== "object") throw new Error("control plane not listening");
  base = `http://127.0.0.1:${address.port}`;
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  dir = mkdtempSync(path.join(tmpdir(), "berth-agent-binary-"));
  // Readable by others: one test runs it as an unprivileged user.
  chmodSync(dir, 0o755);
  bin = path.join(dir, "berth-agent");
  mkdirSync(path.join(dir, "empty-bin"));
  CLEAN_ENV.PATH = path.join(dir, "empty-bin");
  copyFileSync(exe.file, bin);
  chmodSync(bin, 0o755);
}, 600_000);

afterAll(async () => {
  if (agent && agent.exitCode === null) {
    agent.kill("SIGTERM");
    await new Promise((r) => agent?.once("exit", r));
  }
  await cp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
function keptAddon(stateDir: string, name: string): string {
  const kept = readdirSync(stateDir).filter((n) => n.startsWith(`.native-${name}-`) && n.endsWith(".node"));
  expect(kept).toHaveLength(1);
  return path.join(stateDir, kept[0]!);
}

const run = (...args: string[]) => exec(bin, args, { cwd: dir, env: CLEAN_ENV, timeout: 60_000 });

function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 100, detail: () => `agent output:\n${output.slice(-3000)}` });
}

describe("the agent executable", () => {
  it("is one file of a sensible size, and SHA256SUMS vouches for it", () => {
    expect(exe.sizeBytes).toBeGreaterThan(20 * 1024 * 1024);
    expect(exe.sizeBytes).toBeLessThan(160 * 1024 * 1024);
    const sums = readFileSync(path.join(path.dirname(exe.file), "SHA256SUMS"), "utf8");
    const digest = createHash("sha256").update(readFileSync(bin)).digest("hex");
    expect(sums).toContain(`${digest}  berth-agent-linux-x64\n`);
  });

  it("runs with no node_modules and no Node: --version, --help", async () => {
    expect((await run("--version")).stdout.trim()).toBe(exe.version);
    const help = (await run("--help")).stdout;
    for (const command of ["enroll", "run", "status", "uninstall"]) expect(help).toContain(`  ${command}`);
    expect(readdirSync(dir).filter((f) => f !== "empty-bin")).toEqual(["berth-agent"]);
  });

  it("is served by the control plane with its checksum, and so are the installers", async () => {
    const res = await fetch(`${base}/agent/v1/download/x64`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("x-checksum-sha256")).toBe(exe.sha256);
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.length).toBe(exe.sizeBytes);
    expect(createHash("sha256").update(body).digest("hex")).toBe(exe.sha256);

    const sha = await fetch(`${base}/agent/v1/download/x64/sha256`);
    expect(await sha.text()).toBe(`${exe.sha256}  berth-agent-linux-x64\n`);
    expect(await (await fetch(`${base}/agent/v1/SHA256SUMS`)).text()).toBe(`${exe.sha256}  berth-agent-linux-x64\n`);

    const missing = await fetch(`${base}/agent/v1/download/arm64`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: "agent_not_built", message: expect.stringContaining("linux-arm64") });
    const bogus = await fetch(`${base}/agent/v1/download/sparc`);
    expect(bogus.status).toBe(404);
    expect(await bogus.json()).toMatchObject({ error: "unsupported_arch" });

    const install = await fetch(`${base}/install.sh`);
    expect(install.status).toBe(200);
    const script = await install.text();
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    // The default --url is the control plane the script came from.
    expect(script).toContain(`DEFAULT_URL="${base}"`);
    expect(await (await fetch(`${base}/uninstall.sh`)).text()).toContain("berth-agent uninstall");

    const releases = await fetch(`${base}/agent/v1/releases`);
    expect(await releases.json()).toEqual({
      version: exe.version,
      install_command: `curl -fsSL ${base}/install.sh | sudo sh -s -- --token <token>`,
      executables: [{ arch: "x64", url: `${base}/agent/v1/download/x64`, sha256: exe.sha256, size: exe.sizeBytes }],
    });
  });

  it("enrols, connects, runs diagnostics through the signed command path, and reports status", async () => {
    const created = await publicClient(cp.app, d.api_keys.org_rw).post("/servers", { name: "binary-1" });
    expect(created.status).toBe(201);
    const serverId: string = created.body.server.id;
    const stateDir = path.join(dir, "state");

    const enrolled = await exec(bin, ["enroll", "--url", base, "--state-dir", stateDir], {
      cwd: dir,
      env: { ...CLEAN_ENV, BERTH_TOKEN: created.body.enrollment.token },
      timeout: 60_000,
    });
    expect(enrolled.stdout).toContain(`Enrolled as server ${serverId}`);
    // Enrolment kept the packed addons in the state directory, each named by its digest.
    const addon = keptAddon(stateDir, "better_sqlite3");
    expect(path.basename(addon)).toBe(`.native-better_sqlite3-${sha256(addon).slice(0, 32)}.node`);
    const pageOut = keptAddon(stateDir, "berth_page_out");
    expect(path.basename(pageOut)).toBe(`.native-berth_page_out-${sha256(pageOut).slice(0, 32)}.node`);

    const started = Date.now();
    agent = spawn(bin, ["run", "--state-dir", stateDir], { cwd: dir, env: CLEAN_ENV, stdio: ["ignore", "pipe", "pipe"] });
    agent.stdout?.on("data", (c: Buffer) => (output += c.toString()));
    agent.stderr?.on("data", (c: Buffer) => (output += c.toString()));
    await waitFor("the agent to connect", () => cp.app.gateway.isConnected(serverId));
    process.stderr.write(`[agent-binary] start to connected: ${Date.now() - started} ms\n`);
    // ...and the daemon loaded that copy instead of unpacking the asset again.
    expect(readFileSync(`/proc/${agent.pid}/maps`, "utf8")).toContain(addon);
    // Once linked, it hands the pages of the executable that start-up read back to the kernel.
    await waitFor("the executable to be paged out", () => output.includes("paged out the executable"), 40_000);
    const paged = JSON.parse(output.split("\n").find((l) => l.includes("paged out the executable"))!) as { rss_file_mb_before: number; rss_file_mb_after: number };
    expect(paged.rss_file_mb_after).toBeLessThan(paged.rss_file_mb_before / 2);
    expect(readFileSync(`/proc/${agent.pid}/maps`, "utf8")).toContain(pageOut);

    const command = await cp.app.services.agentCommands.issue({
      organizationId: d.organization_id,
      serverId,
      type: "diagnostics",
      params: {},
      issuedBy: "system:e2e",
    });
    const row = async () =>
      (await cp.database.pool.query("select state, result, error from agent_commands where command_id = $1", [command.commandId])).rows[0] as {
        state: string;
        result: Record<string, unknown> | null;
        error: unknown;
      };
    await waitFor("diagnostics to finish", async () => ["succeeded", "failed"].includes((await row()).state));
    const done = await row();
    expect(done.error).toBeNull();
    expect(done.state).toBe("succeeded");
    // Docker answered through the real engine, SQLite (the packed native addon) through the journal.
    expect(done.result).toMatchObject({
      partial: false,
      agent: { version: exe.version, node_version: expect.stringMatching(/^v24\./) },
      docker: { reachable: true, version: expect.any(String) },
      journal: { pending_events: expect.any(Number) },
    });

    const servers = await cp.database.pool.query("select agent_version, status from servers where id = $1", [serverId]);
    expect(servers.rows[0]).toMatchObject({ agent_version: exe.version, status: "online" });

    await waitFor("a heartbeat in the status file", async () => (await run("status", "--state-dir", stateDir)).stdout.includes("heartbeat: "));
    const status = (await run("status", "--state-dir", stateDir)).stdout;
    expect(status).toContain(`server:   ${serverId}`);
    expect(status).toMatch(/agent: {4}running \(pid \d+, version /);
    expect(status).toMatch(/link: {5}connected since /);
    expect(status).toMatch(/journal: {2}\d+ events pending/);

    agent.kill("SIGTERM");
    const exit = await new Promise<number | null>((r) => agent?.once("exit", (code) => r(code)));
    expect(exit).toBe(0);
  }, 120_000);

  it("loads its kept SQLite addon only when the file matches its digest, and replaces a damaged one", async () => {
    const stateDir = path.join(dir, "state");
    const addon = keptAddon(stateDir, "better_sqlite3");
    const good = sha256(addon);
    chmodSync(addon, 0o600);
    writeFileSync(addon, "not a shared object");
    output = "";
    agent = spawn(bin, ["run", "--state-dir", stateDir], { cwd: dir, env: CLEAN_ENV, stdio: ["ignore", "pipe", "pipe"] });
    agent.stdout?.on("data", (c: Buffer) => (output += c.toString()));
    agent.stderr?.on("data", (c: Buffer) => (output += c.toString()));
    const serverId = (JSON.parse(readFileSync(path.join(stateDir, "identity.json"), "utf8")) as { server_id: string }).server_id;
    await waitFor("the agent to connect", () => cp.app.gateway.isConnected(serverId));
    expect(sha256(addon)).toBe(good);
    expect(readFileSync(`/proc/${agent.pid}/maps`, "utf8")).toContain(addon);
    agent.kill("SIGTERM");
    expect(await new Promise<number | null>((r) => agent?.once("exit", (code) => r(code)))).toBe(0);
  }, 120_000);

  it("refuses uninstall without root, explaining why, and runs the uninstaller it carries", async () => {
    // As root here, so check the script it runs without letting it touch this machine: a
    // non-root user is refused by the script itself.
    const res = await exec("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", bin, "uninstall"], { env: { PATH: SYSTEM_PATH } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(res).toMatchObject({ code: 1, stderr: expect.stringContaining("run as root") });
  });
});
