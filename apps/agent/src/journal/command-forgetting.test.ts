import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { fakeClock, useTempJournals } from "./journal.test-helpers.ts";
import type { Journal } from "./journal-types.ts";

const DAY = 24 * 3_600_000;

/** A journalled command as the runner stores it: the signed command, with its expiry. */
const command = (id: string, seq: number, expiresAt: string) => ({
  commandId: id,
  seq,
  type: "keys.update",
  command: { command_id: id, seq, type: "keys.update", expires_at: expiresAt, signature: "sig" },
});

function ran(journal: Journal, id: string, seq: number, expiresAt: string): void {
  journal.acceptCommand(command(id, seq, expiresAt));
  journal.finishCommand({ commandId: id, result: { ok: true } });
}

/** Both cutoffs as the agent computes them, `days` after the fake clock's start. */
const cutoffsAt = (days: number, keepDays = 7) => ({
  finishedBefore: new Date(Date.parse("2030-01-01T00:00:00.000Z") + (days - keepDays) * DAY),
  expiredBefore: new Date(Date.parse("2030-01-01T00:00:00.000Z") + days * DAY),
});

describe("forgetting finished commands", () => {
  const temp = useTempJournals();

  it("keeps a finished command until it is past its own expiry, then forgets it and keeps its seq", () => {
    const journal = temp.open({ now: fakeClock().now });
    ran(journal, "month", 5, "2030-01-31T00:00:00.000Z");
    ran(journal, "minutes", 6, "2030-01-01T00:15:00.000Z");
    expect(journal.forgottenCommandSeq()).toBe(0);

    // A week and a day later: the short-lived one goes, the one valid for a month stays.
    expect(journal.pruneCommands(cutoffsAt(8))).toBe(1);
    expect(journal.getCommand("minutes")).toBeNull();
    expect(journal.getCommand("month")?.status).toBe("done");
    expect(journal.forgottenCommandSeq()).toBe(6);

    expect(journal.pruneCommands(cutoffsAt(31))).toBe(1);
    expect(journal.getCommand("month")).toBeNull();
    // The mark only rises, and survives a restart.
    expect(journal.forgottenCommandSeq()).toBe(6);
    journal.close();
    expect(temp.open().forgottenCommandSeq()).toBe(6);
  });

  it("moves the mark only for commands that ran; an unauthenticated rejection goes after the keep period", () => {
    const journal = temp.open({ now: fakeClock().now });
    const reject = (id: string, seq: number | null, code: string) =>
      journal.rejectCommand({
        commandId: id,
        seq,
        type: seq === null ? null : "deploy",
        command: { command_id: id, seq: 1_000_000, expires_at: "2099-01-01T00:00:00.000Z" },
        result: { code },
      });
    reject("forged", null, "bad_signature");
    reject("foreign", 900, "wrong_server");
    ran(journal, "run", 3, "2030-01-01T00:15:00.000Z");

    expect(journal.pruneCommands(cutoffsAt(8))).toBe(2);
    expect(journal.getCommand("forged")).toBeNull();
    expect(journal.getCommand("run")).toBeNull();
    // Its seq was checked by its signature, so it stays until its own expiry like any other.
    expect(journal.getCommand("foreign")?.status).toBe("rejected");
    expect(journal.forgottenCommandSeq()).toBe(3);
  });

  it("starts the mark below the lowest seq a journal from an older agent still holds", () => {
    const older = (name: string, setUp: (journal: Journal, sql: (statement: string) => void) => void): number => {
      const path = temp.path(name);
      const sql = (statement: string) => {
        const db = new DatabaseSync(path);
        db.prepare(statement).run();
        db.close();
      };
      const journal = temp.open({ path, now: fakeClock().now });
      setUp(journal, sql);
      journal.close();
      // An older agent's journal: the same schema version, without the key.
      sql("DELETE FROM meta WHERE key = 'forgotten_command_seq'");
      const reopened = temp.open({ path });
      const mark = reopened.forgottenCommandSeq();
      reopened.close();
      return mark;
    };

    // It forgot 1 to 40 after a week whatever their expiry, and still holds 41 and 42.
    expect(
      older("kept-some.db", (journal, sql) => {
        for (let seq = 1; seq <= 42; seq++) ran(journal, `c${seq}`, seq, "2030-01-31T00:00:00.000Z");
        sql("DELETE FROM commands WHERE seq <= 40");
        journal.rejectCommand({ commandId: "foreign", seq: 7, type: "deploy", command: {}, result: { code: "wrong_server" } });
      }),
    ).toBe(40);
    // It forgot everything it ever ran.
    expect(
      older("kept-none.db", (journal, sql) => {
        ran(journal, "c9", 9, "2030-01-31T00:00:00.000Z");
        sql("DELETE FROM commands");
      }),
    ).toBe(9);
  });

  it("starts a new journal with nothing forgotten", () => {
    const journal = temp.open();
    expect(journal.forgottenCommandSeq()).toBe(0);
    ran(journal, "c1", 1, "2030-01-31T00:00:00.000Z");
    journal.close();
    expect(temp.open().forgottenCommandSeq()).toBe(0);
  });
});
