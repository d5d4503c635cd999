import { describe, expect, it } from "vitest";
import { JournalError } from "./journal-error.ts";
import { fakeClock, useTempJournals } from "./journal.test-helpers.ts";

const deploy = (id: string, seq: number) => ({
  commandId: id,
  seq,
  type: "deploy",
  command: { command_id: id, seq, type: "deploy", payload: { env: "prod" }, signature: "sig" },
});

describe("commands journal", () => {
  const temp = useTempJournals();

  it("records a new command before it runs and tells the caller to run it", () => {
    const clock = fakeClock();
    const journal = temp.open({ now: clock.now });
    const outcome = journal.acceptCommand(deploy("c1", 7));
    expect(outcome.shouldRun).toBe(true);
    expect(outcome.record).toEqual({
      commandId: "c1",
      seq: 7,
      type: "deploy",
      command: deploy("c1", 7).command,
      receivedAt: "2030-01-01T00:00:00.000Z",
      status: "accepted",
      result: null,
      finishedAt: null,
    });
  });

  it("answers a repeated command id with the recorded result and never runs it twice", () => {
    const clock = fakeClock();
    const journal = temp.open({ now: clock.now });
    journal.acceptCommand(deploy("c1", 1));
    journal.markCommandRunning("c1");
    clock.advance(1_000);
    journal.finishCommand({ commandId: "c1", result: { ok: true, image: "erp:17" } });

    const again = journal.acceptCommand(deploy("c1", 1));
    expect(again.shouldRun).toBe(false);
    expect(again.record.status).toBe("done");
    expect(again.record.result).toEqual({ ok: true, image: "erp:17" });
    expect(again.record.finishedAt).toBe("2030-01-01T00:00:01.000Z");

    journal.close();
    const reopened = temp.open();
    const afterRestart = reopened.acceptCommand(deploy("c1", 1));
    expect(afterRestart.shouldRun).toBe(false);
    expect(afterRestart.record.result).toEqual({ ok: true, image: "erp:17" });
  });

  it("does not run a repeat of a command that is still running; it has no result yet", () => {
    const journal = temp.open();
    journal.acceptCommand(deploy("c1", 1));
    journal.markCommandRunning("c1");
    const again = journal.acceptCommand(deploy("c1", 1));
    expect(again).toMatchObject({ shouldRun: false, record: { status: "running", result: null } });
  });

  it("keeps the highest accepted seq across restarts, ignoring rejected commands", () => {
    const journal = temp.open();
    expect(journal.lastCommandSeq()).toBe(0);
    journal.acceptCommand(deploy("a", 5));
    journal.acceptCommand(deploy("b", 3));
    journal.rejectCommand({ commandId: "x", seq: 99, type: "deploy", command: {}, result: { code: "expired" } });
    expect(journal.lastCommandSeq()).toBe(5);
    journal.close();
    expect(temp.open().lastCommandSeq()).toBe(5);
  });

  it("records rejected commands so a replay is recognised, and never overwrites a known id", () => {
    const journal = temp.open();
    const rejected = journal.rejectCommand({
      commandId: "bad",
      seq: null,
      type: null,
      command: { command_id: "bad", signature: "forged" },
      result: { code: "bad_signature" },
    });
    expect(rejected).toMatchObject({ status: "rejected", result: { code: "bad_signature" }, seq: null });

    const replay = journal.acceptCommand(deploy("bad", 4));
    expect(replay).toMatchObject({ shouldRun: false, record: { status: "rejected" } });

    journal.acceptCommand(deploy("good", 5));
    journal.finishCommand({ commandId: "good", result: { ok: true } });
    const replayOfDone = journal.rejectCommand({
      commandId: "good",
      seq: 5,
      type: "deploy",
      command: {},
      result: { code: "expired" },
    });
    expect(replayOfDone).toMatchObject({ status: "done", result: { ok: true } });
  });

  it("refuses transitions that would run or finish a command twice", () => {
    const journal = temp.open();
    journal.acceptCommand(deploy("c1", 1));
    journal.markCommandRunning("c1");
    expect(() => journal.markCommandRunning("c1")).toThrow(
      expect.objectContaining({ code: "invalid_transition" }),
    );
    journal.finishCommand({ commandId: "c1", result: { ok: true } });
    expect(() => journal.finishCommand({ commandId: "c1", result: { ok: false } })).toThrow(JournalError);
    expect(journal.getCommand("c1")?.result).toEqual({ ok: true });
    expect(() => journal.markCommandRunning("nope")).toThrow(expect.objectContaining({ code: "unknown_command" }));
    expect(journal.getCommand("nope")).toBeNull();
  });

  it("reports commands left unfinished by a crash, and only those", () => {
    const first = temp.open();
    first.acceptCommand(deploy("running", 1));
    first.markCommandRunning("running");
    first.acceptCommand(deploy("queued", 2));
    first.acceptCommand(deploy("finished", 3));
    first.finishCommand({ commandId: "finished", result: { ok: true } });
    first.close(); // no finish: the agent died here

    const second = temp.open();
    second.acceptCommand(deploy("new", 4));
    second.markCommandRunning("new");
    expect(second.interruptedCommands().map((c) => [c.commandId, c.status])).toEqual([
      ["running", "running"],
      ["queued", "accepted"],
    ]);

    // The agent finishes them with a failed result instead of running them again.
    for (const command of second.interruptedCommands()) {
      second.finishCommand({
        commandId: command.commandId,
        result: { ok: false, error: "agent restarted while running" },
      });
    }
    expect(second.interruptedCommands()).toEqual([]);
    expect(second.acceptCommand(deploy("running", 1)).shouldRun).toBe(false);
  });

  it("writes the result and its command.result event in one transaction", () => {
    const journal = temp.open();
    journal.acceptCommand(deploy("c1", 1));
    const done = journal.finishCommand({
      commandId: "c1",
      result: { ok: true },
      event: { kind: "command.result", body: { command_id: "c1", ok: true } },
    });
    expect(done.event).toMatchObject({ seq: 1, kind: "command.result" });
    expect(journal.pending()).toHaveLength(1);

    journal.acceptCommand(deploy("c2", 2));
    // An invalid event rolls the result back too: the command is still unfinished.
    expect(() =>
      journal.finishCommand({ commandId: "c2", result: { ok: true }, event: { kind: "", body: {} } }),
    ).toThrow(expect.objectContaining({ code: "invalid_input" }));
    expect(journal.getCommand("c2")?.status).toBe("accepted");
    expect(journal.pending()).toHaveLength(1);
  });

  it("prunes finished commands older than a cutoff and keeps unfinished ones", () => {
    const clock = fakeClock("2030-01-01T00:00:00.000Z");
    const journal = temp.open({ now: clock.now });
    journal.acceptCommand(deploy("old", 1));
    journal.finishCommand({ commandId: "old", result: { ok: true } });
    journal.acceptCommand(deploy("open", 2));
    clock.advance(86_400_000);
    journal.acceptCommand(deploy("recent", 3));
    journal.finishCommand({ commandId: "recent", result: { ok: true } });

    const cutoff = new Date("2030-01-01T12:00:00.000Z");
    // These records carry no expires_at: a replay of them could never verify.
    expect(journal.pruneCommands({ finishedBefore: cutoff, expiredBefore: cutoff })).toBe(1);
    expect(journal.getCommand("old")).toBeNull();
    expect(journal.getCommand("open")?.status).toBe("accepted");
    expect(journal.getCommand("recent")?.status).toBe("done");
    expect(journal.lastCommandSeq()).toBe(3);
  });
});
