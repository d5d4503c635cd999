// Temp-dir journals for the tests: real SQLite files, closed and removed after each test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { openJournal } from "./journal.ts";
import type { Journal, JournalOptions } from "./journal-types.ts";

export function useTempJournals() {
  let dir = "";
  const opened: Journal[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "berth-journal-"));
  });
  afterEach(() => {
    for (const journal of opened.splice(0)) {
      try {
        journal.close();
      } catch {
        // Closed by the test already.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir: () => dir,
    path: (name = "journal.db") => join(dir, name),
    open(options: Partial<JournalOptions> = {}): Journal {
      const journal = openJournal({ path: join(dir, "journal.db"), ...options });
      opened.push(journal);
      return journal;
    },
  };
}

export function fakeClock(startIso = "2030-01-01T00:00:00.000Z") {
  let at = Date.parse(startIso);
  return {
    now: () => new Date(at),
    advance: (ms: number) => {
      at += ms;
    },
  };
}
