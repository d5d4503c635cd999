import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../clock.ts";
import { openJournal } from "../journal/journal.ts";
import { silentLogger } from "../logger.ts";
import { startCommandPruning } from "./command-pruning.ts";

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
});
