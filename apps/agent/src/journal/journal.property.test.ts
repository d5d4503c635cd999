import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openJournal } from "./journal.ts";
import type { DroppedCounts, DropReason, EventInput, Journal, JournalEvent, JournalOptions } from "./journal-types.ts";
import { useTempJournals } from "./journal.test-helpers.ts";

type Op =
  | { op: "append"; events: EventInput[]; batch: boolean }
  | { op: "ack"; back: number }
  | { op: "reopen" };

const eventArb: fc.Arbitrary<EventInput> = fc.oneof(
  fc.record({
    kind: fc.constant("log"),
    level: fc.constantFrom("debug" as const, "info" as const, "warning" as const, "error" as const),
    body: fc.record({ message: fc.string({ maxLength: 40 }) }),
  }),
  fc.record({ kind: fc.constant("stats"), body: fc.record({ cpu: fc.double({ min: 0, max: 1, noNaN: true }) }) }),
  fc.record({
    kind: fc.constantFrom("command.result", "step.started", "step.finished", "step.failed", "container.state"),
    body: fc.record({ id: fc.nat() }),
  }),
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("append" as const), events: fc.array(eventArb, { minLength: 1, maxLength: 8 }), batch: fc.boolean() }) },
  // Acks somewhere around the tip: behind it, at it, and past it.
  { weight: 2, arbitrary: fc.record({ op: fc.constant("ack" as const), back: fc.integer({ min: -2, max: 12 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
);

const isNotice = (e: JournalEvent) =>
  e.kind === "log" && (e.body["data"] as { source?: string } | undefined)?.source === "journal";
const reasonOf = (e: { kind: string; level?: string | null }): DropReason | null =>
  e.kind === "stats" ? "stats" : e.kind === "log" && e.level !== "error" ? (`log.${e.level}` as DropReason) : null;

function run(journal: Journal, op: Op): JournalEvent[] {
  if (op.op !== "append") return [];
  return op.batch ? journal.appendMany(op.events) : op.events.map((e) => journal.append(e));
}

describe("journal properties", () => {
  const temp = useTempJournals();
  let files = 0;

  function withJournal(options: Omit<JournalOptions, "path">, body: (open: () => Journal) => void) {
    const path = temp.path(`prop-${files++}.db`);
    let current: Journal | null = null;
    const open = () => {
      current?.close();
      current = openJournal({ path, ...options });
      return current;
    };
    try {
      body(open);
    } finally {
      (current as Journal | null)?.close();
    }
  }

  it("pending is always what was appended minus what was acked, in seq order, without duplicates", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 30 }), (ops) => {
        withJournal({ maxPendingEvents: Infinity, maxPendingBytes: Infinity }, (open) => {
          let journal = open();
          const appended: JournalEvent[] = [];
          let acked = 0;
          for (const op of ops) {
            if (op.op === "reopen") journal = open();
            if (op.op === "ack") {
              const upTo = journal.nextEventSeq() - 1 - op.back;
              journal.ack(upTo);
              acked = Math.max(acked, Math.min(upTo, journal.nextEventSeq() - 1));
            }
            appended.push(...run(journal, op));

            const expected = appended.filter((e) => e.seq > acked);
            const actual = journal.pending(0, 10_000);
            expect(actual).toEqual(expected.map((e) => ({ ...e, level: e.level ?? null })));
            expect(journal.nextEventSeq()).toBe(appended.length + 1);
            expect(journal.lastAckedSeq()).toBe(acked);
          }
        });
      }),
      { numRuns: 60 },
    );
  });

  it("under a small cap it drops only droppable events, counts every drop and keeps one notice", () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 20 }), fc.array(opArb, { maxLength: 30 }), (cap, ops) => {
        withJournal({ maxPendingEvents: cap }, (open) => {
          let journal = open();
          const live = new Map<number, JournalEvent>();
          const dropped: DroppedCounts = { "log.debug": 0, "log.info": 0, "log.warning": 0, stats: 0 };
          for (const op of ops) {
            if (op.op === "reopen") journal = open();
            if (op.op === "ack") {
              const upTo = journal.nextEventSeq() - 1 - op.back;
              // Whatever the ack covers leaves the model whether or not it was dropped
              // first, so learn about drops before it.
              for (const [seq] of live) if (seq <= upTo) live.delete(seq);
              journal.ack(upTo);
            }
            for (const event of run(journal, op)) live.set(event.seq, event);

            const pending = journal.pending(0, 10_000);
            const seqs = pending.map((e) => e.seq);
            expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
            expect(pending.filter(isNotice).length).toBeLessThanOrEqual(1);
            const present = new Set(seqs);
            for (const [seq, event] of live) {
              if (present.has(seq)) continue;
              const reason = reasonOf(event);
              expect(reason, `seq ${seq} (${event.kind}) must never be dropped`).not.toBeNull();
              if (reason) dropped[reason] += 1;
              live.delete(seq);
            }
            expect(journal.droppedCount()).toEqual(dropped);
            // Over the cap only when nothing droppable is left to drop.
            if (pending.length > cap) {
              expect(pending.filter((e) => !isNotice(e) && reasonOf(e) !== null)).toEqual([]);
            }
          }
        });
      }),
      { numRuns: 60 },
    );
  });
});
