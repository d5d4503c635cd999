import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../clock.ts";
import { openJournal } from "../journal/journal.ts";
import { silentLogger } from "../logger.ts";
import { startCommandPruning } from "./command-pruning.ts";

const DAY = 24 * 3_600_000;

describe("command pruning", () => {
  const dir = mkdtempSync(join(tmpdir(), "berth-prune-"));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("forgets commands finished more than a week ago and keeps recent ones", () => {
    let now = Date.parse("2030-01-01T00:00:00.000Z");
    const journal = openJournal({ path: join(dir, "journal.db"), now: () => new Date(now) });
    journal.acceptCommand({ commandId: "old", seq: 1, type: "diagnostics", command: {} });
    journal.finishCommand({ commandId: "old", result: { ok: true } });
    now += 8 * 24 * 3_600_000;
    journal.acceptCommand({ commandId: "recent", seq: 2, type: "diagnostics", command: {} });
    journal.finishCommand({ commandId: "recent", result: { ok: true } });

    const pruning = startCommandPruning({ journal, clock: { ...systemClock, now: () => new Date(now) }, logger: silentLogger });
    pruning.stop();
    expect(journal.getCommand("old")).toBeNull();
    expect(journal.getCommand("recent")?.status).toBe("done");
    journal.close();
  });

  it("keeps a command whose own expiry outlives the week (keys.update: 30 days) until it expires", () => {
    const start = Date.parse("2030-01-01T00:00:00.000Z");
    let now = start;
    const clock = { ...systemClock, now: () => new Date(now) };
    const journal = openJournal({ path: join(dir, "expiry.db"), now: () => new Date(now) });
    const keysUpdate = {
      command_id: "keys",
      seq: 7,
      type: "keys.update",
      issued_at: new Date(start).toISOString(),
      expires_at: new Date(start + 30 * DAY).toISOString(),
    };
    journal.acceptCommand({ commandId: "keys", seq: 7, type: "keys.update", command: keysUpdate });
    journal.finishCommand({ commandId: "keys", result: { ok: true } });

    // Eight days on it is past the keep period but still valid: a replay of a forgotten id
    // would verify and run again, so it stays and a replay is answered from its record.
    now = start + 8 * DAY;
    startCommandPruning({ journal, clock, logger: silentLogger }).stop();
    expect(journal.getCommand("keys")?.status).toBe("done");
    expect(journal.forgottenCommandSeq()).toBe(0);

    // Within verifyCommand's clock skew of its expiry it could still verify.
    now = start + 30 * DAY + 20_000;
    startCommandPruning({ journal, clock, logger: silentLogger }).stop();
    expect(journal.getCommand("keys")?.status).toBe("done");

    now = start + 30 * DAY + 31_000;
    startCommandPruning({ journal, clock, logger: silentLogger }).stop();
    expect(journal.getCommand("keys")).toBeNull();
    expect(journal.forgottenCommandSeq()).toBe(7);
    journal.close();
  });
});
