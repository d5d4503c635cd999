// The real agent's journal (apps/agent/src/journal, node:sqlite) behind a simulated agent, with
// a small bound: the journal-overflow fault fills it past the bound while the link is cut and
// measures the journal's promise (oldest debug, then info lines dropped first and counted in
// a drop notice; command results and steps never dropped). The real agent has no setting for
// the bound (its journal keeps 100 000 events or 64 MiB), so the drill drives the journal
// module itself rather than filling a real agent with 100 000 events.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Event } from "@berth/protocol";
import { openJournal } from "../../apps/agent/src/journal/journal.ts";
import { toJournalInput, toWireEvent } from "../../apps/agent/src/events/wire-events.ts";
import type { SimJournal } from "./sim-agent.ts";

export function agentJournal(maxPendingEvents: number): SimJournal & { dropped(): number; close(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-drill-journal-"));
  const journal = openJournal({ path: path.join(dir, "journal.db"), maxPendingEvents });
  return {
    append(event, ts) {
      return toWireEvent(journal.append({ ...toJournalInput(event), ts }));
    },
    from(fromSeq) {
      const out: Event[] = [];
      let after = fromSeq - 1;
      for (;;) {
        const page = journal.pending(after, 500);
        if (page.length === 0) return out;
        out.push(...page.map(toWireEvent));
        after = page[page.length - 1]!.seq;
      }
    },
    ack(upTo) {
      if (upTo > journal.lastAckedSeq()) journal.ack(upTo);
    },
    nextSeq: () => journal.nextEventSeq(),
    count: () => journal.stats().pendingCount,
    dropped: () => journal.stats().droppedTotal,
    close() {
      journal.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
