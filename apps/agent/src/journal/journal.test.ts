import { spawn, spawnSync } from "node:child_process";
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { openJournal } from "./journal.ts";
import { fakeClock, useTempJournals } from "./journal.test-helpers.ts";
import { SCHEMA_VERSION } from "./schema.ts";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("journal file", () => {
  const temp = useTempJournals();

  it("is readable by its owner only, WAL and shared-memory files included", () => {
    const journal = temp.open();
    journal.append({ kind: "log", level: "info", body: { message: "secret-ish" } });
    expect(mode(temp.path())).toBe(0o600);
    expect(mode(`${temp.path()}-wal`)).toBe(0o600);
    expect(mode(`${temp.path()}-shm`)).toBe(0o600);
  });

  it("tightens the mode of a file left world-readable by an older install", () => {
    temp.open().close();
    chmodSync(temp.path(), 0o644);
    temp.open();
    expect(mode(temp.path())).toBe(0o600);
  });

  it("creates the schema in WAL mode and records its version", () => {
    temp.open().close();
    const db = new DatabaseSync(temp.path(), { readOnly: true });
    expect(db.prepare("PRAGMA journal_mode").get()?.journal_mode).toBe("wal");
    expect(db.prepare("PRAGMA user_version").get()?.user_version).toBe(SCHEMA_VERSION);
    db.close();
  });

  it("refuses a schema newer than it knows rather than writing into it", () => {
    temp.open().close();
    const db = new DatabaseSync(temp.path());
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => temp.open()).toThrow(expect.objectContaining({ code: "schema_too_new" }));
  });

  it("rejects caps that are not positive integers", () => {
    expect(() => openJournal({ path: temp.path(), maxPendingEvents: 0 })).toThrow(/maxPendingEvents/);
    expect(() => openJournal({ path: temp.path(), maxPendingBytes: 1.5 })).toThrow(/maxPendingBytes/);
  });

  it("reports the figures a status command needs", () => {
    const clock = fakeClock("2030-03-03T00:00:00.000Z");
    const journal = temp.open({ now: clock.now, maxPendingEvents: 1_000, maxPendingBytes: Infinity });
    journal.acceptCommand({ commandId: "c9", seq: 9, type: "status", command: {} });
    journal.appendMany([
      { kind: "log", level: "info", body: { message: "one" } },
      { kind: "log", level: "info", body: { message: "two" } },
      { kind: "stats", body: { cpu: 0.25 } },
    ]);
    journal.ack(1);
    clock.advance(90_000);

    const stats = journal.stats();
    expect(stats).toEqual({
      pendingCount: 2,
      pendingBytes: expect.any(Number),
      oldestPendingSeq: 2,
      oldestPendingAgeMs: 90_000,
      nextEventSeq: 4,
      lastAckedSeq: 1,
      lastCommandSeq: 9,
      dropped: { "log.debug": 0, "log.info": 0, "log.warning": 0, stats: 0 },
      droppedTotal: 0,
      maxPendingEvents: 1_000,
      maxPendingBytes: null,
      overCap: false,
      fileBytes: expect.any(Number),
      walBytes: expect.any(Number),
    });
    expect(stats.pendingBytes).toBeGreaterThan(0);
    expect(stats.fileBytes + stats.walBytes).toBeGreaterThan(0);
    journal.ack(3);
    expect(journal.stats()).toMatchObject({ pendingCount: 0, pendingBytes: 0, oldestPendingAgeMs: null });
  });
});

describe("journal after the agent process is killed", () => {
  const temp = useTempJournals();

  it("keeps every committed event and reports the command that was running", () => {
    // A real crash: a child process writes, then SIGKILLs itself without closing the file.
    const journalModule = fileURLToPath(new URL("./journal.ts", import.meta.url));
    const script = join(temp.dir(), "crash.ts");
    writeFileSync(
      script,
      `import { openJournal } from ${JSON.stringify(journalModule)};
const journal = openJournal({ path: ${JSON.stringify(temp.path())} });
journal.acceptCommand({ commandId: "c1", seq: 1, type: "deploy", command: { command_id: "c1" } });
journal.markCommandRunning("c1");
journal.appendMany([1, 2, 3].map((n) => ({ kind: "log", level: "info", body: { n } })));
journal.append({ kind: "step.started", body: { step: "pulling_image" } });
process.kill(process.pid, "SIGKILL");
`,
    );
    const child = spawnSync(process.execPath, ["--import", "tsx", script], {
      cwd: fileURLToPath(new URL("../../../..", import.meta.url)),
      encoding: "utf8",
    });
    expect(child.signal, child.stderr).toBe("SIGKILL");

    const journal = temp.open();
    expect(journal.interruptedCommands()).toMatchObject([{ commandId: "c1", status: "running" }]);
    expect(journal.pending().map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(journal.nextEventSeq()).toBe(5);
    expect(journal.lastCommandSeq()).toBe(1);
    expect(journal.acceptCommand({ commandId: "c1", seq: 1, type: "deploy", command: {} }).shouldRun).toBe(false);
  });
});

describe("journal opened by two processes at once", () => {
  const temp = useTempJournals();

  it("creates the schema once: `status` and the daemon may open a fresh journal together", async () => {
    // Each child imports the journal, then waits for a shared instant so the opens collide
    // (the daemon starting while the installer polls `berth-agent status` on a fresh install).
    const journalModule = fileURLToPath(new URL("./journal.ts", import.meta.url));
    const script = join(temp.dir(), "open.ts");
    writeFileSync(
      script,
      `import { openJournal } from ${JSON.stringify(journalModule)};
const at = Number(process.argv[2]);
while (Date.now() < at) {}
openJournal({ path: process.argv[3] }).close();
`,
    );
    const cwd = fileURLToPath(new URL("../../../..", import.meta.url));
    for (let round = 0; round < 3; round++) {
      const path = join(temp.dir(), `race-${round}.db`);
      const at = String(Date.now() + 2_500);
      const results = await Promise.all(
        Array.from({ length: 4 }, () => run(process.execPath, ["--import", "tsx", script, at, path], cwd)),
      );
      // Each child's outcome: "ok", or the first line of its error ("table meta already exists").
      const outcomes = results.map((r) => (r.code === 0 ? "ok" : (r.stderr.match(/^\w*Error.*$/m)?.[0] ?? r.stderr)));
      expect(outcomes).toEqual(["ok", "ok", "ok", "ok"]);
      const db = new DatabaseSync(path, { readOnly: true });
      expect(db.prepare("PRAGMA user_version").get()?.user_version).toBe(SCHEMA_VERSION);
      db.close();
    }
  });
});

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("close", (code) => resolve({ code, stderr }));
  });
}
