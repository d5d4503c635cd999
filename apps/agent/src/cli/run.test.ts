// `berth-agent run` as a real process: enrol, connect, run a signed command against the real
// engine, report through `status`, and shut down cleanly on SIGTERM.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLOSE_CODES, type Event } from "@berth/protocol";
import { signedCommand, type TestIdentity } from "../agent/agent.test-helpers.ts";
import { eventually, framesOf, sendCommand, startFakeControlPlane, type FakeControlPlane } from "../link/fake-control-plane.test-helpers.ts";
import { EXIT_CONFIG } from "../config/agent-config.ts";
import { loadIdentity } from "../state/identity.ts";
import { readLinkStatus } from "../state/link-status-file.ts";
import { statePaths } from "../state/state-dir.ts";
import { exitOf, runCli, spawnCli } from "./cli.test-helpers.ts";

describe("berth-agent run", () => {
  let dir = "";
  let cp: FakeControlPlane;
  let child: ReturnType<typeof spawnCli> | null = null;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "berth-run-"));
    cp = await startFakeControlPlane();
  });
  afterEach(async () => {
    if (child !== null && child.exitCode === null) {
      child.kill("SIGKILL");
      await exitOf(child);
    }
    await cp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("connects, runs a signed command, shows in status, and stops cleanly on SIGTERM", async () => {
    expect((await runCli(["enroll", "--url", cp.url, "--token", "tok", "--state-dir", dir])).code).toBe(0);
    const paths = statePaths(dir);
    const serverId = loadIdentity(paths).identity.server_id;

    child = spawnCli(["run", "--state-dir", dir], { BERTH_LOG_LEVEL: "warn" });
    const connection = await cp.readyConnection(0, 20_000);
    expect(connection.hello?.server_id).toBe(serverId);
    await eventually(() => readLinkStatus(paths.linkStatus)?.state === "ready", "the status file to say ready");

    const command = signedCommand(cp, { serverId } as TestIdentity, "diagnostics", {});
    sendCommand(connection, command);
    const result = () =>
      [...cp.stored.values()].find(
        (e): e is Extract<Event, { kind: "command.result" }> => e.kind === "command.result" && e.command_id === command.command_id,
      );
    await eventually(() => result() !== undefined, "the diagnostics result", 20_000);
    expect(framesOf(connection, "command.accepted")).toHaveLength(1);
    expect(result()?.ok).toBe(true);

    const status = await runCli(["status", "--state-dir", dir]);
    expect(status.out[0]).toBe(`server:   ${serverId}`);
    expect(status.out[1]).toMatch(/^agent: {4}running \(pid \d+/);
    expect(status.out[2]).toMatch(/^link: {5}connected since /);

    child.kill("SIGTERM");
    expect(await exitOf(child)).toEqual({ code: 0, signal: null });
    expect(await connection.closed).toMatchObject({ code: CLOSE_CODES.normal });
    expect(readLinkStatus(paths.linkStatus)?.state).toBe("stopped");
    expect(child.output()).not.toMatch(/"level":50/); // No error lines.
  }, 60_000);

  it("exits for a person to look at a journal from a newer agent, and for a retry when the journal stays locked", async () => {
    expect((await runCli(["enroll", "--url", cp.url, "--token", "tok", "--state-dir", dir])).code).toBe(0);
    const paths = statePaths(dir);

    // Through node:sqlite like the agent: SQLite's locks only hold between connections of one
    // SQLite library within a process (POSIX locks are per process).
    const other = new DatabaseSync(paths.journal);
    other.exec("PRAGMA journal_mode = WAL");
    other.exec("BEGIN EXCLUSIVE");
    const locked = await runCli(["run", "--state-dir", dir]);
    expect(locked.code).toBe(1);
    expect(locked.err.join("\n")).toContain("cannot open the journal");
    other.exec("ROLLBACK");

    other.exec("PRAGMA user_version = 99");
    other.close();
    const newer = await runCli(["run", "--state-dir", dir]);
    expect(newer.code).toBe(EXIT_CONFIG);
    expect(newer.err.join("\n")).toContain("journal schema is version 99");
  }, 30_000);
});
