// install.sh and uninstall.sh for real, as root inside a throwaway Debian 12 machine (a
// container from a debootstrap root file system, test/images/debian.sh) with the host's
// Docker socket and network: the dashboard's one-line install against a real control plane,
// a re-install that upgrades while events wait to be sent, a self-update through the signed
// command path with the fallback supervisor restarting the agent, a rollback of an update
// that does not start, root never running a file the agent's user can write (a planted
// executable and symlinks through a re-install, root's berth-agent and uninstall), and
// uninstall. systemd does not run as PID 1 in a container, so the unit is checked with
// `systemd-analyze verify` and the agent runs under the installer's fallback supervisor.
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { chmodSync, copyFileSync, linkSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { createAgentReleases } from "../../apps/control-plane/src/modules/agent-releases/agent-releases.service.ts";
import { REPO_ROOT, type BuiltExecutable } from "../../installers/build/build-agent.ts";
import { freePort } from "../setup/global-setup.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { agentExecutable, agentExecutableVersion } from "./agent-executable.ts";
import { waitUntil } from "../support/wait.ts";

const exec = promisify(execFile);
const IMAGE = "berth-test/debian:12";
const CONTAINER = `berth-install-test-${process.pid}`;

let v0: BuiltExecutable;
let v1: BuiltExecutable;
let v2: BuiltExecutable;
let served: string;
let port: number;
let base: string;
let first: TestControlPlane;
let cp: TestControlPlane;
let d: DemoOrganization;
let serverId: string;
const extraContainers: string[] = [];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A shell command as root inside the test machine. */
async function sh(script: string, timeoutMs = 120_000): Promise<Run> {
  try {
    const { stdout, stderr } = await exec("docker", ["exec", CONTAINER, "sh", "-c", script], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(error) };
  }
}

async function ok(script: string, timeoutMs?: number): Promise<string> {
  const r = await sh(script, timeoutMs);
  if (r.code !== 0) throw new Error(`\`${script}\` exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const detail = async () => `agent log:\n${(await sh("tail -n 40 /var/log/berth-agent.log")).stdout}`;
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail });
}

interface StatusJson {
  server_id: string | null;
  daemon: { running: boolean };
  link: { state: string } | null;
  journal: { pendingCount: number; nextEventSeq: number; lastAckedSeq: number } | null;
}

async function status(): Promise<StatusJson> {
  return JSON.parse(await ok("runuser -u berth-agent -- env BERTH_STATE_DIR=/var/lib/berth-agent berth-agent status --json || true")) as StatusJson;
}

/** What the control plane serves (BERTH_AGENT_DIST_DIR): the executable `exe`, as manifest.json says. */
function serve(exe: BuiltExecutable): void {
  const name = `berth-agent-${exe.version}-linux-x64`;
  rmSync(path.join(served, name), { force: true });
  linkSync(exe.file, path.join(served, name));
  const manifest = { version: exe.version, executables: { x64: { file: name, sha256: exe.sha256, size: exe.sizeBytes } } };
  writeFileSync(path.join(served, "manifest.json.tmp"), JSON.stringify(manifest));
  // A rename, so the control plane never reads half a manifest; a new mtime, so it re-reads it.
  copyFileSync(path.join(served, "manifest.json.tmp"), path.join(served, "manifest.json"));
}

const agentVersion = async () =>
  ((await cp.database.pool.query("select agent_version from servers where id = $1", [serverId])).rows[0] as { agent_version: string | null }).agent_version;

async function commandRow(commandId: string) {
  return (await cp.database.pool.query("select state, result, error from agent_commands where command_id = $1", [commandId])).rows[0] as {
    state: string;
    result: Record<string, unknown> | null;
    error: unknown;
  };
}

async function finished(commandId: string, timeoutMs = 60_000) {
  await waitFor(`command ${commandId} to finish`, async () => ["succeeded", "failed", "rejected"].includes((await commandRow(commandId)).state), timeoutMs);
  return commandRow(commandId);
}

beforeAll(async () => {
  // Once per machine (cached by its inputs): the Debian root file system, the executables.
  await exec("bash", [path.join(REPO_ROOT, "test/images/debian.sh"), "--quiet"], { timeout: 600_000 });
  v0 = await agentExecutable();
  v1 = await agentExecutableVersion("0.1.1");
  v2 = await agentExecutableVersion("0.1.2");

  served = mkdtempSync(path.join(REPO_ROOT, "installers/.cache/served-"));
  for (const script of ["install.sh", "uninstall.sh"]) copyFileSync(path.join(REPO_ROOT, "installers", script), path.join(served, script));
  serve(v0);
  process.env.BERTH_AGENT_DIST_DIR = served;

  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  first = await startControlPlane({ port, heartbeatMs: 2000 });
  cp = first;
  d = await createDemoOrganization(cp.database.db, cp.app.services);

  await exec("docker", ["rm", "-f", CONTAINER]).catch(() => {});
  const v1Dir = path.dirname(v1.file);
  chmodSync(v1Dir, 0o755);
  await exec("docker", [
    // --init: an init that reaps, as every real machine has.
    "run", "-d", "--init", "--name", CONTAINER, "--label", "berth.test=installers",
    // The control plane listens on the host's 127.0.0.1; the agent reaches it there.
    "--network", "host",
    "-v", "/var/run/docker.sock:/var/run/docker.sock",
    "-v", `${path.join(REPO_ROOT, "installers")}:/installers:ro`,
    "-v", `${v1Dir}:/dist-0.1.1:ro`,
    IMAGE, "sleep", "1800",
  ]);
}, 900_000);

afterAll(async () => {
  await exec("docker", ["rm", "-f", CONTAINER, ...extraContainers]).catch(() => {});
  if (cp !== first) await cp?.close();
  await first?.close();
  if (served) rmSync(served, { recursive: true, force: true });
});

describe("install.sh in a fresh Debian 12 machine", () => {
  it("is shellcheck clean, and so are uninstall.sh and the image script", async () => {
    const files = ["installers/install.sh", "installers/uninstall.sh", "test/images/debian.sh"].map((f) => path.join(REPO_ROOT, f));
    const r = await exec("shellcheck", files).catch((e: { stdout: string }) => ({ stdout: e.stdout, failed: true }));
    expect(r.stdout).toBe("");
  });

  it("says clearly when Docker is missing, and installs nothing", async () => {
    const r = await sh(`sh /installers/install.sh --url ${base} --token t --docker-socket /run/no-docker.sock`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Docker is not installed (no socket at /run/no-docker.sock): install it first");
    expect((await sh("test -e /opt/berth-agent || test -e /var/lib/berth-agent")).code).not.toBe(0);
  });

  it("refuses an executable whose checksum does not match", async () => {
    const r = await sh(`sh /installers/install.sh --url ${base} --token t --sha256 ${"0".repeat(64)}`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`checksum mismatch: expected ${"0".repeat(64)}, got ${v0.sha256}; nothing was installed`);
    expect((await sh("test -e /opt/berth-agent/berth-agent")).code).not.toBe(0);
  });

  it("refuses an executable whose release manifest is not signed with --key, and plain http to another machine", async () => {
    // A key of someone else's: the manifest the control plane serves does not verify against it.
    const spki = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" });
    const otherKey = spki.subarray(spki.length - 32).toString("base64");
    const r = await sh(`sh /installers/install.sh --url ${base} --token t --key ${otherKey}`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the release manifest's signature does not verify against the control plane's key");
    expect((await sh("test -e /opt/berth-agent/berth-agent")).code).not.toBe(0);

    const http = await sh("sh /installers/install.sh --url http://berth.example.test --token t");
    expect(http.code).toBe(1);
    expect(http.stderr).toContain("refusing to download from http://berth.example.test: plain http://");
    const odd = await sh(`sh /installers/install.sh --url 'https://x;id' --token t`);
    expect(odd.code).toBe(1);
    expect(odd.stderr).toContain("not a plain http(s)://host[:port] URL");
  });

  it("installs with the dashboard's one line: downloads, verifies, user, 0700 state, unit, enrols, starts", async () => {
    // Over real HTTP, so the command names the control plane as this machine reached it.
    const res = await fetch(`${base}/api/public/v1/servers`, {
      method: "POST",
      headers: { authorization: `Bearer ${d.api_keys.org_rw}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "install-test" }),
    });
    expect(res.status).toBe(201);
    const created = { body: (await res.json()) as { server: { id: string }; enrollment: { install_command: string } } };
    serverId = created.body.server.id;
    // The command exactly as shown, as root already (no sudo in this machine).
    const command = created.body.enrollment.install_command.replace("| sudo sh", "| sh");
    expect(command).toContain(`--key ${await cp.app.services.signer.releaseKey()}`);
    const out = await ok(command, 180_000);
    expect(out).toContain("the release manifest is signed by the control plane's key");
    expect(out).toContain(`verified berth-agent ${v0.version} (sha256 ${v0.sha256})`);
    expect(out).toContain("systemd is not running here");
    expect(out).toContain("connected to the control plane");
    expect(cp.app.gateway.isConnected(serverId)).toBe(true);
    expect(await agentVersion()).toBe(v0.version);

    expect((await ok("id -nG berth-agent")).split(/\s+/)).toContain("docker");
    expect(await ok("getent passwd berth-agent | cut -d: -f7")).toBe("/usr/sbin/nologin\n");
    expect(await ok("stat -c '%a %U' /var/lib/berth-agent /var/lib/berth-agent/agent.key")).toBe("700 berth-agent\n600 berth-agent\n");
    expect(await ok("ps -o user= -p $(pgrep -f '^/opt/berth-agent/berth-agent run' | head -n 1)")).toBe("berth-agent\n");
    // Everyone's command is root's root-owned wrapper, which runs the executable as the agent's user (or as the caller, for anyone but root).
    expect(await ok("readlink /usr/local/bin/berth-agent")).toBe("/usr/local/sbin/berth-agent\n");

    const unit = await ok("cat /etc/systemd/system/berth-agent.service");
    expect(unit).toContain("ExecStart=/opt/berth-agent/berth-agent run");
    expect(unit).toContain("Restart=on-failure");
    expect(unit).toContain("User=berth-agent");
    expect(unit).toContain("ProtectSystem=strict");
    const verify = await sh("systemd-analyze verify /etc/systemd/system/berth-agent.service");
    expect(verify.stderr.split("\n").filter((l) => l.includes("berth-agent.service"))).toEqual([]);
    expect(verify.code).toBe(0);

    // The installed agent does real work through the host's engine.
    const diag = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:test" });
    const row = await finished(diag.commandId);
    expect(row.state).toBe("succeeded");
    expect(row.result).toMatchObject({ docker: { reachable: true }, agent: { version: v0.version } });
  }, 240_000);

  it("a re-install without --key checks the release against root's copy of the key, never the agent's own identity", async () => {
    const key = await cp.app.services.signer.releaseKey();
    expect(await ok("stat -c '%U %a' /usr/local/lib/berth-agent/release-key")).toBe("root 644\n");
    expect(await ok("cat /usr/local/lib/berth-agent/release-key")).toBe(`${key}\n`);
    // The agent's user (who can write its identity) swaps the pinned keys for its own: a
    // re-install that believed them would refuse the genuine release (and accept theirs).
    const spki = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" });
    const theirs = spki.subarray(spki.length - 32).toString("base64");
    const identity = await ok("cat /var/lib/berth-agent/identity.json");
    const forged = identity.replaceAll(/"public_key": *"[A-Za-z0-9+/=]+"/g, `"public_key": "${theirs}"`);
    expect(forged).not.toBe(identity);
    const asAgent = (text: string) => ok(`echo ${Buffer.from(text).toString("base64")} | base64 -d | runuser -u berth-agent -- tee /var/lib/berth-agent/identity.json >/dev/null`);
    await asAgent(forged);
    try {
      const out = await ok(`sh /installers/install.sh --url ${base} --connect-timeout 0 --no-start`, 180_000);
      expect(out).toContain("the release manifest is signed by the control plane's key");
    } finally {
      await asAgent(identity);
    }
    // Started again with its true identity, as the dashboard's command would.
    expect(await ok(`sh /installers/install.sh --url ${base} --key ${key}`, 180_000)).toContain("connected to the control plane");
  }, 240_000);

  it("re-installs a newer version in place, keeping the identity and the events not yet sent", async () => {
    const identity = await ok("cat /var/lib/berth-agent/identity.json");
    // The control plane goes away; the agent keeps journalling (stats every 10 s).
    await cp.stop();
    await waitFor("events waiting in the journal", async () => ((await status()).journal?.pendingCount ?? 0) > 0, 40_000);
    const before = await status();
    const waitingUpTo = before.journal!.nextEventSeq - 1;

    // A setting of the administrator's own, beside install.sh's lines, must survive the upgrade.
    await ok("echo BERTH_PUBLIC_ADDRESSES=203.0.113.7 >> /etc/default/berth-agent");
    const out = await ok("sh /installers/install.sh --binary /dist-0.1.1/berth-agent-linux-x64 --connect-timeout 0", 180_000);
    const settings = await ok("cat /etc/default/berth-agent");
    expect(settings.split("\n").filter((line) => line === "BERTH_PUBLIC_ADDRESSES=203.0.113.7")).toHaveLength(1);
    expect(settings.split("\n").filter((line) => line.startsWith("# Written by install.sh"))).toHaveLength(1);
    expect(out).toContain("already enrolled; keeping this server's identity and journal");
    expect(out).toContain(`upgrading berth-agent ${v0.version} -> ${v1.version}`);
    expect(await ok("cat /var/lib/berth-agent/identity.json")).toBe(identity);
    expect(await ok("berth-agent --version")).toBe(`${v1.version}\n`);
    const after = await status();
    expect(after.server_id).toBe(serverId);
    expect(after.journal!.pendingCount).toBeGreaterThanOrEqual(before.journal!.pendingCount);
    expect(after.journal!.lastAckedSeq).toBe(before.journal!.lastAckedSeq);

    // The control plane is back (same database, same port): the waiting events arrive.
    cp = await startControlPlane({ url: first.url, port, heartbeatMs: 2000 });
    await waitFor("the upgraded agent to reconnect", () => cp.app.gateway.isConnected(serverId), 60_000);
    expect(await agentVersion()).toBe(v1.version);
    await waitFor("the waiting events to be acknowledged", async () => ((await status()).journal?.lastAckedSeq ?? 0) >= waitingUpTo, 30_000);
    const stored = await cp.database.pool.query("select last_event_seq from agent_streams where server_id = $1", [serverId]);
    expect(Number((stored.rows[0] as { last_event_seq: number }).last_event_seq)).toBeGreaterThanOrEqual(waitingUpTo);
  }, 240_000);

  it("updates itself when the control plane says so: signed digest, atomic swap, restart", async () => {
    serve(v2);
    const releases = createAgentReleases({ distDir: served, commands: cp.app.services.agentCommands });
    const update = await releases.issueUpdate({ organizationId: d.organization_id, serverId, arch: "x64", baseUrl: base, issuedBy: "system:test" });
    const row = await finished(update.commandId, 120_000);
    expect(row.error).toBeNull();
    expect(row.result).toEqual({ updated: true, from: v1.version, to: v2.version });
    await waitFor("the agent to come back as the new version", async () => cp.app.gateway.isConnected(serverId) && (await agentVersion()) === v2.version, 60_000);
    expect(await ok("/opt/berth-agent/berth-agent --version")).toBe(`${v2.version}\n`);
    expect(await ok("/opt/berth-agent/berth-agent.previous --version")).toBe(`${v1.version}\n`);
    // Connected, so the update is committed.
    await waitFor("the update marker to go", async () => (await sh("test -e /var/lib/berth-agent/update-pending")).code !== 0, 10_000);
  }, 240_000);

  it("refuses an update whose bytes are not the signed ones, and keeps running", async () => {
    const signedElsewhere = await cp.app.services.agentCommands.issue({
      organizationId: d.organization_id,
      serverId,
      type: "agent.update",
      params: { version: "0.1.9", url: `${base}/agent/v1/download/x64`, sha256: "a".repeat(64), size: v2.sizeBytes },
      issuedBy: "system:test",
    });
    const row = await finished(signedElsewhere.commandId, 120_000);
    expect(row.state).toBe("failed");
    expect(row.error).toMatchObject({ code: "update_checksum_mismatch" });
    expect(await ok("/opt/berth-agent/berth-agent --version")).toBe(`${v2.version}\n`);
    expect(cp.app.gateway.isConnected(serverId)).toBe(true);
  }, 180_000);

  it("rolls back to the previous executable when an update does not start", async () => {
    // As if the update to 0.1.2 had failed to start three times: the next start rolls back.
    await ok("printf 'from=0.1.1\\nto=0.1.2\\nattempts=3\\n' > /var/lib/berth-agent/update-pending && chown berth-agent /var/lib/berth-agent/update-pending");
    await ok("pkill -KILL -f '^/opt/berth-agent/berth-agent run'");
    await waitFor("the previous version to be back", async () => cp.app.gateway.isConnected(serverId) && (await agentVersion()) === v1.version, 60_000);
    expect(await ok("/opt/berth-agent/berth-agent --version")).toBe(`${v1.version}\n`);
    expect((await sh("test -e /var/lib/berth-agent/update-pending")).code).not.toBe(0);
    expect(await ok("grep -c 'rolled back to the previous one' /var/log/berth-agent.log || true")).not.toBe("0\n");
  }, 120_000);

  it("never lets root run a file the agent's user can write: unit, re-install, root's berth-agent, uninstall", async () => {
    // What root runs is root's, in directories only root may write.
    expect(await ok("stat -c '%U:%G %a %n' /usr/local/lib/berth-agent /usr/local/lib/berth-agent/* /usr/local/sbin/berth-agent")).toBe(
      [
        "root:root 755 /usr/local/lib/berth-agent",
        "root:root 644 /usr/local/lib/berth-agent/release-key",
        "root:root 755 /usr/local/lib/berth-agent/supervise",
        "root:root 755 /usr/local/lib/berth-agent/uninstall.sh",
        "root:root 755 /usr/local/lib/berth-agent/update-guard",
        "root:root 755 /usr/local/sbin/berth-agent",
        "",
      ].join("\n"),
    );
    expect((await sh("runuser -u berth-agent -- sh -c 'echo exit 0 >/usr/local/lib/berth-agent/update-guard'")).code).not.toBe(0);
    expect((await sh("runuser -u berth-agent -- mv /usr/local/lib/berth-agent/update-guard /usr/local/lib/berth-agent/x")).code).not.toBe(0);
    // The unit runs every step as the agent's user: no "+" or "!" step runs with full privileges.
    const unit = await ok("cat /etc/systemd/system/berth-agent.service");
    expect(unit.split("\n").filter((line) => line.startsWith("Exec"))).toEqual([
      "ExecStartPre=/usr/local/lib/berth-agent/update-guard",
      "ExecStart=/opt/berth-agent/berth-agent run",
    ]);
    expect(unit).not.toContain("PermissionsStartOnly");
    // The page-out and self-update still need the executable to be the agent's.
    expect(await ok("stat -c '%U' /opt/berth-agent/berth-agent")).toBe("berth-agent\n");

    // The attack, as a compromised agent could mount it: its executable becomes a script that
    // notes who ran it, the previous one and an old helper become symlinks to files only root
    // may write (root writing through them would hand them to the agent).
    const fake = '#!/bin/sh\necho "$*" >>"/tmp/berth-ran-as-$(id -un)"\n';
    await ok(`echo ${Buffer.from(fake).toString("base64")} | base64 -d >/tmp/fake-agent && chmod 0644 /tmp/fake-agent`);
    const rootsOwn = "stat -c '%U %a' /etc/berth-planted /etc/berth-planted-guard && cat /etc/berth-planted /etc/berth-planted-guard";
    await ok("for f in /etc/berth-planted /etc/berth-planted-guard; do echo root only >$f && chmod 0600 $f; done");
    const plant = () =>
      ok(
        "runuser -u berth-agent -- sh -c 'cp /tmp/fake-agent /opt/berth-agent/fake && chmod 0755 /opt/berth-agent/fake && " +
          "mv -f /opt/berth-agent/fake /opt/berth-agent/berth-agent && " +
          "ln -sfn /etc/berth-planted /opt/berth-agent/berth-agent.previous && ln -sfn /etc/berth-planted-guard /opt/berth-agent/update-guard'",
      );
    const ranAsRoot = async () => (await sh("test -e /tmp/berth-ran-as-root")).code === 0;
    await plant();

    // A re-install (an upgrade, as far as install.sh can tell) over it.
    const out = await ok("sh /installers/install.sh --binary /dist-0.1.1/berth-agent-linux-x64", 180_000);
    expect(out).toContain("connected to the control plane");
    expect(await ranAsRoot()).toBe(false);
    // It did run, as the agent's user: the attack was live.
    expect(await ok("cat /tmp/berth-ran-as-berth-agent")).toBe("--version\n");
    const untouched = "root 600\nroot 600\nroot only\nroot only\n";
    expect(await ok(rootsOwn)).toBe(untouched);
    expect(await ok("/opt/berth-agent/berth-agent --version")).toBe(`${v1.version}\n`);
    expect(await ok("stat -c '%U %a' /opt/berth-agent/berth-agent")).toBe("berth-agent 755\n");
    expect((await sh("test -e /opt/berth-agent/update-guard")).code).not.toBe(0);

    // Root's berth-agent runs commands as the agent's user, and uninstall from root's copy.
    await plant();
    await ok("berth-agent status --json");
    const uninstalled = await ok("berth-agent uninstall", 120_000);
    expect(uninstalled).toContain("kept the agent's identity and journal");
    expect(await ranAsRoot()).toBe(false);
    expect(await ok("cat /tmp/berth-ran-as-berth-agent")).toBe("--version\nstatus --json\n");
    expect(await ok(rootsOwn)).toBe(untouched);
    for (const gone of ["/usr/local/lib/berth-agent", "/usr/local/sbin/berth-agent"]) expect((await sh(`test -e ${gone}`)).code, gone).not.toBe(0);

    // Installed again (the identity was kept), for the uninstall that follows.
    expect(await ok("sh /installers/install.sh --binary /dist-0.1.1/berth-agent-linux-x64", 180_000)).toContain("connected to the control plane");
    await waitFor("the agent to reconnect", () => cp.app.gateway.isConnected(serverId), 60_000);
  }, 480_000);

  it("uninstalls: service and files go, deployments and (unless --purge) the identity stay", async () => {
    // A deployment's container on the engine, which uninstall must leave alone.
    const { stdout } = await exec("docker", [
      "run", "-d", "--network", "none", "--label", "berth.managed=true", "--label", "berth.test=installers",
      "--entrypoint", "sleep", "berth-test/erp:17.0", "600",
    ]);
    const deployment = stdout.trim();
    extraContainers.push(deployment);

    // The executable carries the uninstaller; root's berth-agent runs the copy install.sh took.
    const out = await ok("berth-agent uninstall", 120_000);
    expect(out).toContain("left Berth's deployments (containers, volumes, networks) in place");
    await waitFor("the agent to disconnect", () => !cp.app.gateway.isConnected(serverId), 30_000);
    expect((await sh("pgrep -f '^/opt/berth-agent/berth-agent run'")).code).not.toBe(0);
    for (const gone of ["/opt/berth-agent", "/usr/local/bin/berth-agent", "/etc/systemd/system/berth-agent.service"]) {
      expect((await sh(`test -e ${gone}`)).code, gone).not.toBe(0);
    }
    expect(await ok("ls /var/lib/berth-agent")).toContain("identity.json");
    const inspect = await exec("docker", ["inspect", "-f", "{{.State.Running}}", deployment]);
    expect(inspect.stdout.trim()).toBe("true");

    const purge = await ok("sh /installers/uninstall.sh --purge");
    expect(purge).toContain("removed the agent's state");
    expect((await sh("test -e /var/lib/berth-agent")).code).not.toBe(0);
    expect((await sh("getent passwd berth-agent")).code).not.toBe(0);
  }, 180_000);
});
