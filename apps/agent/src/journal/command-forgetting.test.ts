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

  it("keeps a finished command until it is past its own expiry, then forgets it", () => {
    const journal = temp.open({ now: fakeClock().now });
    ran(journal, "month", 5, "2030-01-31T00:00:00.000Z");
    ran(journal, "minutes", 6, "2030-01-01T00:15:00.000Z");

    // A week and a day later: the short-lived one goes, the one valid for a month stays.
    expect(journal.pruneCommands(cutoffsAt(8))).toBe(1);
    expect(journal.getCommand("minutes")).toBeNull();
    expect(journal.getCommand("month")?.status).toBe("done");

    expect(journal.pruneCommands(cutoffsAt(31))).toBe(1);
    expect(journal.getCommand("month")).toBeNull();
  });

  it("forgets an unauthenticated rejection after the keep period, whatever expiry it claims", () => {
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

    expect(journal.pruneCommands(cutoffsAt(8))).toBe(1);
    expect(journal.getCommand("forged")).toBeNull();
    // Its seq was checked by its signature, so it stays until its own expiry like any other.
    expect(journal.getCommand("foreign")?.status).toBe("rejected");
  });
});
