// `npm start` with settings or folders it cannot use: the real server process stops before it
// starts anything, with one line per problem naming the setting, no stack trace, exit code 1.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../installers/build/build-agent.ts";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder as `mktemp -d` makes it: mode 0700, owned by whoever runs the tests. */
function mktempD(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-start-"));
  chmodSync(dir, 0o700);
  made.push(dir);
  return dir;
}

/** Runs apps/control-plane/src/server.ts as `npm start` does, with only these settings; kills it if it goes on to start. */
function startServer(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(BERTH_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$)/.test(name)));
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(REPO_ROOT, "node_modules/.bin/tsx"), ["apps/control-plane/src/server.ts"], {
      cwd: REPO_ROOT,
      env: { ...base, INIT_CWD: REPO_ROOT, BERTH_PORT: "0", BERTH_EMBEDDED_PG_PORT: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const NO_STACK = /^\s+at /m;

describe("npm start refuses settings it cannot use", () => {
  it("names every invalid value at once, one line each, and exits 1 without a stack trace", async () => {
    const { code, stdout, stderr } = await startServer({
      BERTH_PORT: "http",
      BERTH_REGISTRATION: "maybe",
      BERTH_METRICS: "yes",
      BERTH_TRUST_PROXY: "proxy.local",
    });
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines).toEqual([
      'berth: BERTH_PORT must be a port number (0-65535), got "http"',
      'berth: BERTH_REGISTRATION must be one of open, invite, closed, got "maybe"',
      expect.stringMatching(/^berth: BERTH_TRUST_PROXY must be true, a hop count, or addresses/),
      'berth: BERTH_METRICS must be on or off, got "yes"',
      expect.stringMatching(/^berth: not started: 4 settings need fixing/),
    ]);
    expect(stderr).not.toMatch(NO_STACK);
    expect(stdout).not.toContain("starting embedded PostgreSQL");
  });

  it("names a backup or upload folder it cannot write, before it starts anything", async () => {
    const { code, stderr } = await startServer({
      DATABASE_URL: "postgres://berth@127.0.0.1:1/berth",
      BERTH_BACKUP_DIR: "/etc/hostname/backups",
      BERTH_MIGRATION_UPLOAD_DIR: "/etc/hostname/uploads",
    });
    expect(code).toBe(1);
    expect(stderr).toContain("berth: BERTH_BACKUP_DIR: /etc/hostname/backups cannot be a folder, /etc/hostname is a file");
    expect(stderr).toContain("berth: BERTH_MIGRATION_UPLOAD_DIR: /etc/hostname/uploads cannot be a folder, /etc/hostname is a file");
    expect(stderr).not.toMatch(NO_STACK);
  });

  // PostgreSQL refuses to run as root, so as root it runs as the user postgres, which cannot
  // enter a folder root made with mktemp -d. Without the check, initdb fails with a bare
  // "Permission denied".
  it.runIf(process.getuid?.() === 0)("stops before initdb when PostgreSQL's user cannot enter the data directory, saying which folder, which user and the fix", async () => {
    const tmp = mktempD();
    const dataDir = path.join(tmp, "data");
    const { code, stdout, stderr } = await startServer({ BERTH_DATA_DIR: dataDir });
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(`BERTH_DATA_DIR: PostgreSQL runs as the user postgres (Berth runs as root), which cannot enter ${tmp} (owner uid 0, mode 0700)`);
    expect(lines[0]).toContain(`run \`chmod o+x ${tmp}\`, or set BERTH_DATA_DIR to a folder postgres can reach`);
    expect(stderr).not.toMatch(NO_STACK);
    expect(stdout).not.toContain("starting embedded PostgreSQL");
    expect(existsSync(path.join(dataDir, "postgres"))).toBe(false);
  });
});
