// End to end with the agent as it ships: the single executable (npm run build:agent),
// copied to a directory with no node_modules, run with an empty environment (no Node on the
// PATH either), enrolled against a real control plane that also serves the executable and
// the installers, and asked for diagnostics through the signed command path.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, type BuiltExecutable } from "../../installers/build/build-agent.ts";
import { agentExecutable } from "../installers/agent-executable.ts";
import { executableUnderTest, type ExecutableUnderTest } from "../support/executable-under-test.ts";

const exec = promisify(execFile);

let exe: BuiltExecutable;
let t: ExecutableUnderTest;

// Nothing from this environment: a PATH on which there is nothing at all (so no Node either).
const CLEAN_ENV: Record<string, string> = {};
const SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

beforeAll(async () => {
  exe = await agentExecutable();
  // Readable by others: one test runs it as an unprivileged user.
  t = await executableUnderTest(exe.file, { tmpPrefix: "berth-agent-binary-", dirMode: 0o755, env: () => CLEAN_ENV });
  mkdirSync(path.join(t.dir, "empty-bin"));
  CLEAN_ENV.PATH = path.join(t.dir, "empty-bin");
}, 600_000);

afterAll(async () => t?.close());

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
function keptAddon(stateDir: string, name: string): string {
  const kept = readdirSync(stateDir).filter((n) => n.startsWith(`.native-${name}-`) && n.endsWith(".node"));
  expect(kept).toHaveLength(1);
  return path.join(stateDir, kept[0]!);
}

const run = (...args: string[]) => t.run(args);

describe("the agent executable", () => {
  it("is one file of a sensible size, and SHA256SUMS vouches for it", () => {
    expect(exe.sizeBytes).toBeGreaterThan(20 * 1024 * 1024);
    expect(exe.sizeBytes).toBeLessThan(160 * 1024 * 1024);
    const sums = readFileSync(path.join(path.dirname(exe.file), "SHA256SUMS"), "utf8");
    const digest = sha256(t.bin);
    expect(sums).toContain(`${digest}  berth-agent-linux-x64\n`);
  });

  it("runs with no node_modules and no Node: --version, --help", async () => {
    expect((await run("--version")).stdout.trim()).toBe(exe.version);
    const help = (await run("--help")).stdout;
    for (const command of ["enroll", "run", "status", "uninstall"]) expect(help).toContain(`  ${command}`);
    expect(readdirSync(t.dir).filter((f) => f !== "empty-bin")).toEqual(["berth-agent"]);
  });

  it("is served by the control plane with its checksum, and so are the installers", async () => {
    const res = await fetch(`${t.base}/agent/v1/download/x64`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("x-checksum-sha256")).toBe(exe.sha256);
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.length).toBe(exe.sizeBytes);
    expect(createHash("sha256").update(body).digest("hex")).toBe(exe.sha256);

    const sha = await fetch(`${t.base}/agent/v1/download/x64/sha256`);
    expect(await sha.text()).toBe(`${exe.sha256}  berth-agent-linux-x64\n`);
    expect(await (await fetch(`${t.base}/agent/v1/SHA256SUMS`)).text()).toBe(`${exe.sha256}  berth-agent-linux-x64\n`);

    const missing = await fetch(`${t.base}/agent/v1/download/arm64`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: "agent_not_built", message: expect.stringContaining("linux-arm64") });
    const bogus = await fetch(`${t.base}/agent/v1/download/sparc`);
    expect(bogus.status).toBe(404);
    expect(await bogus.json()).toMatchObject({ error: "unsupported_arch" });

    const install = await fetch(`${t.base}/install.sh`);
    expect(install.status).toBe(200);
    const script = await install.text();
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    // The default --url is the control plane the script came from.
    expect(script).toContain(`DEFAULT_URL='${t.base}'`);
    expect(await (await fetch(`${t.base}/uninstall.sh`)).text()).toContain("berth-agent uninstall");

    const releases = await fetch(`${t.base}/agent/v1/releases`);
    // --key: the control plane's release-signing key, which install.sh verifies the signed manifest with.
    const key = await t.cp.app.services.signer.releaseKey();
    expect(await releases.json()).toEqual({
      version: exe.version,
      install_command: `curl -fsSL ${t.base}/install.sh | sudo sh -s -- --key ${key} --token <token>`,
      release_key: key,
      executables: [{ arch: "x64", url: `${t.base}/agent/v1/download/x64`, sha256: exe.sha256, size: exe.sizeBytes }],
    });
  });

  it("enrols, connects, runs diagnostics through the signed command path, and reports status", async () => {
    const { serverId, token } = await t.newServer("binary-1");
    const stateDir = path.join(t.dir, "state");

    const enrolled = await t.run(["enroll", "--url", t.base, "--state-dir", stateDir], { BERTH_TOKEN: token });
    expect(enrolled.stdout).toContain(`Enrolled as server ${serverId}`);
    // Enrolment kept the packed addon in the state directory, named by its digest; SQLite is
    // Node's own (node:sqlite), nothing of it is packed or kept.
    expect(readdirSync(stateDir).filter((n) => n.startsWith(".native-"))).toHaveLength(1);
    const pageOut = keptAddon(stateDir, "berth_page_out");
    expect(path.basename(pageOut)).toBe(`.native-berth_page_out-${sha256(pageOut).slice(0, 32)}.node`);

    const started = Date.now();
    const agent = t.daemon(stateDir);
    await agent.waitFor("the agent to connect", () => t.cp.app.gateway.isConnected(serverId));
    process.stderr.write(`[agent-binary] start to connected: ${Date.now() - started} ms\n`);
    // Once linked, it hands the pages of the executable that start-up read back to the kernel.
    await agent.waitFor("the executable to be paged out", () => agent.output.includes("paged out the executable"), 40_000);
    const paged = JSON.parse(agent.output.split("\n").find((l) => l.includes("paged out the executable"))!) as { rss_file_mb_before: number; rss_file_mb_after: number };
    expect(paged.rss_file_mb_after).toBeLessThan(paged.rss_file_mb_before / 2);
    expect(readFileSync(`/proc/${agent.pid}/maps`, "utf8")).toContain(pageOut);

    const done = await t.diagnostics(serverId, agent);
    expect(done.error).toBeNull();
    expect(done.state).toBe("succeeded");
    // Docker answered through the real engine, SQLite (node:sqlite, inside Node) through the journal.
    expect(done.result).toMatchObject({
      partial: false,
      agent: { version: exe.version, node_version: expect.stringMatching(/^v24\./) },
      docker: { reachable: true, version: expect.any(String) },
      journal: { pending_events: expect.any(Number) },
    });

    const servers = await t.cp.database.pool.query("select agent_version, status from servers where id = $1", [serverId]);
    expect(servers.rows[0]).toMatchObject({ agent_version: exe.version, status: "online" });

    await agent.waitFor("a heartbeat in the status file", async () => (await run("status", "--state-dir", stateDir)).stdout.includes("heartbeat: "));
    const status = (await run("status", "--state-dir", stateDir)).stdout;
    expect(status).toContain(`server:   ${serverId}`);
    expect(status).toMatch(/agent: {4}running \(pid \d+, version /);
    expect(status).toMatch(/link: {5}connected since /);
    expect(status).toMatch(/journal: {2}\d+ events pending/);

    expect(await agent.stop()).toBe(0);
  }, 120_000);

  it("loads its kept addon only when the file matches its digest, and replaces a damaged one", async () => {
    const stateDir = path.join(t.dir, "state");
    const addon = keptAddon(stateDir, "berth_page_out");
    const good = sha256(addon);
    chmodSync(addon, 0o600);
    writeFileSync(addon, "not a shared object");
    const agent = t.daemon(stateDir);
    const serverId = (JSON.parse(readFileSync(path.join(stateDir, "identity.json"), "utf8")) as { server_id: string }).server_id;
    await agent.waitFor("the agent to connect", () => t.cp.app.gateway.isConnected(serverId));
    // The addon is loaded when the executable pages itself out, after the first link.
    await agent.waitFor("the executable to be paged out", () => agent.output.includes("paged out the executable"), 40_000);
    expect(sha256(addon)).toBe(good);
    expect(readFileSync(`/proc/${agent.pid}/maps`, "utf8")).toContain(addon);
    expect(await agent.stop()).toBe(0);
  }, 120_000);

  it("refuses uninstall without root, explaining why, and runs the uninstaller it carries", async () => {
    // As root here, so check the script it runs without letting it touch this machine: a
    // non-root user is refused by the script itself.
    const res = await exec("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", t.bin, "uninstall"], { env: { PATH: SYSTEM_PATH } }).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(res).toMatchObject({ code: 1, stderr: expect.stringContaining("run as root") });
  });

  it("prints the uninstaller it carries, byte for byte, for install.sh's root-owned copy", async () => {
    const printed = await run("uninstall", "--print-script");
    expect(printed.stdout).toBe(readFileSync(path.join(REPO_ROOT, "installers/uninstall.sh"), "utf8"));
  });
});
