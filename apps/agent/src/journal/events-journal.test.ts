import { describe, expect, it } from "vitest";
import type { EventInput } from "./journal-types.ts";
import { fakeClock, useTempJournals } from "./journal.test-helpers.ts";

const info = (message: string): EventInput => ({ kind: "log", level: "info", body: { message } });
const seqs = (events: readonly { seq: number }[]) => events.map((e) => e.seq);

describe("events journal", () => {
  const temp = useTempJournals();

  it("numbers events from 1 and stamps them with the injected clock", () => {
    const journal = temp.open({ now: fakeClock("2030-05-01T10:00:00.000Z").now });
    expect(journal.nextEventSeq()).toBe(1);
    const first = journal.append(info("hello"));
    expect(first).toEqual({
      seq: 1,
      ts: "2030-05-01T10:00:00.000Z",
      kind: "log",
      level: "info",
      body: { message: "hello" },
    });
    const second = journal.append({ kind: "step.started", ts: "2030-05-01T09:59:59.000Z", body: { step: "pulling_image" } });
    expect(second).toMatchObject({ seq: 2, level: null, ts: "2030-05-01T09:59:59.000Z" });
    expect(journal.nextEventSeq()).toBe(3);
    expect(journal.pending()).toEqual([first, second]);
  });

  it("keeps the seq counter across restarts and never reuses a seq after everything is acked", () => {
    const journal = temp.open();
    journal.appendMany([info("a"), info("b"), info("c")]);
    journal.ack(3);
    expect(journal.pending()).toEqual([]);
    journal.close();

    const reopened = temp.open();
    expect(reopened.nextEventSeq()).toBe(4);
    expect(reopened.lastAckedSeq()).toBe(3);
    expect(reopened.append(info("d")).seq).toBe(4);
  });

  it("returns unacknowledged events in seq order, after a given seq, up to a limit", () => {
    const journal = temp.open();
    journal.appendMany(Array.from({ length: 10 }, (_, i) => info(`line ${i}`)));
    expect(seqs(journal.pending())).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(seqs(journal.pending(4, 3))).toEqual([5, 6, 7]);
    journal.ack(6);
    // Without afterSeq, resending starts after the last ack.
    expect(seqs(journal.pending())).toEqual([7, 8, 9, 10]);
    expect(seqs(journal.pending(0, 2))).toEqual([7, 8]);
    expect(() => journal.pending(0, 0)).toThrow(expect.objectContaining({ code: "invalid_input" }));
  });

  it("treats acks as cumulative: repeats and older acks change nothing", () => {
    const journal = temp.open();
    journal.appendMany(Array.from({ length: 5 }, (_, i) => info(`line ${i}`)));
    expect(journal.ack(3)).toEqual({ deleted: 3, lastAckedSeq: 3 });
    expect(journal.ack(3)).toEqual({ deleted: 0, lastAckedSeq: 3 });
    expect(journal.ack(1)).toEqual({ deleted: 0, lastAckedSeq: 3 });
    expect(seqs(journal.pending())).toEqual([4, 5]);
    expect(journal.stats()).toMatchObject({ pendingCount: 2, lastAckedSeq: 3 });
  });

  it("clamps an ack beyond the last seq handed out", () => {
    const journal = temp.open();
    journal.appendMany([info("a"), info("b")]);
    expect(journal.ack(1_000)).toEqual({ deleted: 2, lastAckedSeq: 2 });
    expect(journal.append(info("c")).seq).toBe(3);
    expect(seqs(journal.pending())).toEqual([3]);
  });

  it("writes a batch in one transaction: one bad event stores none of it", () => {
    const journal = temp.open();
    journal.append(info("before"));
    expect(() => journal.appendMany([info("a"), { kind: "log", body: { message: "no level" } }, info("c")])).toThrow(
      expect.objectContaining({ code: "invalid_input" }),
    );
    expect(journal.nextEventSeq()).toBe(2);
    expect(journal.stats().pendingCount).toBe(1);
    expect(seqs(journal.appendMany([info("a"), info("b")]))).toEqual([2, 3]);
    expect(journal.appendMany([])).toEqual([]);
  });

  it("allows a level only on logs and requires it there", () => {
    const journal = temp.open();
    expect(() => journal.append({ kind: "stats", level: "info", body: {} })).toThrow(/level/);
    expect(() => journal.append({ kind: "log", level: "trace" as never, body: {} })).toThrow(/level/);
    expect(() => journal.append({ kind: "log", level: "info", body: [] as never })).toThrow(/object/);
    expect(journal.append({ kind: "stats", level: null, body: { cpu: 0.5 } }).level).toBeNull();
  });

  it("moves the counter forward when told to, never backward", () => {
    const journal = temp.open();
    journal.append(info("a"));
    expect(journal.skipEventSeqTo(100)).toBe(100);
    expect(journal.skipEventSeqTo(50)).toBe(100);
    expect(journal.append(info("b")).seq).toBe(100);
    journal.close();
    expect(temp.open().nextEventSeq()).toBe(101);
  });
});
