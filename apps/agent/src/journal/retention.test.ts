import { describe, expect, it } from "vitest";
import type { EventInput, Journal, JournalEvent, LogLevel } from "./journal-types.ts";
import { fakeClock, useTempJournals } from "./journal.test-helpers.ts";

const log = (level: LogLevel, message: string): EventInput => ({ kind: "log", level, body: { message } });
const stats = (cpu: number): EventInput => ({ kind: "stats", body: { cpu } });
const step = (name: string): EventInput => ({ kind: "step.finished", body: { step: name } });
const result = (id: string): EventInput => ({ kind: "command.result", body: { command_id: id } });

const data = (e: JournalEvent | undefined) => (e?.body["data"] ?? {}) as Record<string, unknown>;
const isNotice = (e: JournalEvent) => e.kind === "log" && data(e)["source"] === "journal";
const label = (e: JournalEvent) => (isNotice(e) ? "notice" : e.level ? `${e.kind}.${e.level}` : e.kind);
const all = (journal: Journal) => journal.pending(0, 10_000);

describe("retention when the journal is full", () => {
  const temp = useTempJournals();

  it("drops the oldest debug lines first, down to 90% of the cap, and says so once", () => {
    const journal = temp.open({ maxPendingEvents: 10, now: fakeClock("2030-02-02T00:00:00.000Z").now });
    journal.appendMany([
      ...["d1", "d2", "d3", "d4"].map((m) => log("debug", m)),
      log("info", "i1"),
      log("warning", "w1"),
      stats(1),
      step("pulling_image"),
      result("c1"),
      log("error", "e1"),
    ]);
    expect(journal.droppedCount()["log.debug"]).toBe(0);

    // 11 > 10: drop to 9 minus a place for the notice = 8, i.e. the 3 oldest debug lines.
    journal.append(log("debug", "d5"));
    const pending = all(journal);
    expect(pending.map((e) => e.body["message"] ?? e.kind).slice(0, -1)).toEqual([
      "d4", "i1", "w1", "stats", "step.finished", "command.result", "e1", "d5",
    ]);
    const notice = pending.at(-1);
    expect(notice).toMatchObject({
      seq: 12,
      kind: "log",
      level: "warning",
      body: {
        command_id: null,
        deployment_id: null,
        step: null,
        data: {
          source: "journal",
          since: "2030-02-02T00:00:00.000Z",
          dropped: { "log.debug": 3, "log.info": 0, "log.warning": 0, stats: 0 },
          dropped_total: { "log.debug": 3, "log.info": 0, "log.warning": 0, stats: 0 },
        },
      },
    });
    expect(notice?.body["message"]).toMatch(/dropped 3 debug log lines since 2030-02-02T00:00:00.000Z\.$/);
    expect(journal.stats()).toMatchObject({ pendingCount: 9, droppedTotal: 3, overCap: false });
  });

  it("goes debug, then info, then warning, then the oldest stats, and replaces its notice", () => {
    const journal = temp.open({ maxPendingEvents: 10 });
    journal.appendMany([
      log("debug", "d1"),
      log("info", "i1"),
      log("info", "i2"),
      log("warning", "w1"),
      log("warning", "w2"),
      stats(1),
      stats(2),
      step("a"),
      step("b"),
      step("c"),
    ]);
    journal.append(log("error", "e1")); // 11: drops d1, i1, i2 -> 8, plus the notice = 9
    expect(journal.droppedCount()).toEqual({ "log.debug": 1, "log.info": 2, "log.warning": 0, stats: 0 });

    // 9 + 3 = 12 -> 9 (8 plus the place the replaced notice frees): drop w1, w2 and the
    // older stats sample; the newest stats sample stays.
    journal.appendMany([result("c1"), result("c2"), result("c3")]);
    expect(all(journal).map(label)).toEqual([
      "stats", "step.finished", "step.finished", "step.finished", "log.error",
      "command.result", "command.result", "command.result", "notice",
    ]);
    expect(all(journal)[0]?.body).toEqual({ cpu: 2 });
    const notices = all(journal).filter(isNotice);
    expect(notices).toHaveLength(1);
    expect(data(notices[0])["dropped"]).toEqual({ "log.debug": 1, "log.info": 2, "log.warning": 2, stats: 1 });
    expect(journal.droppedCount()).toEqual({ "log.debug": 1, "log.info": 2, "log.warning": 2, stats: 1 });
  });

  it("never drops command results, steps or errors: it exceeds the cap and reports it", () => {
    const journal = temp.open({ maxPendingEvents: 5 });
    journal.appendMany([result("c1"), step("a"), { kind: "step.failed", body: {} }, log("error", "boom")]);
    journal.appendMany([{ kind: "container.state", body: { state: "running" } }, result("c2"), step("b")]);
    expect(all(journal)).toHaveLength(7);
    expect(journal.stats()).toMatchObject({ pendingCount: 7, overCap: true, droppedTotal: 0 });
    expect(all(journal).filter(isNotice)).toEqual([]);

    // A droppable line arriving now is dropped at once, and the notice admits the overrun.
    journal.append(log("info", "late"));
    const notice = all(journal).find(isNotice);
    expect(data(notice)["dropped"]).toMatchObject({ "log.info": 1 });
    expect(notice?.body["message"]).toMatch(/over its cap/);
    expect(all(journal).filter((e) => !isNotice(e))).toHaveLength(7);
  });

  it("applies the byte cap the same way", () => {
    // Each debug line costs 1000 bytes: 954 of message, 14 of JSON, 3 + 5 of kind and
    // level, 24 of ts.
    const line = () => log("debug", "x".repeat(954));
    const journal = temp.open({ maxPendingBytes: 10_000 });
    journal.appendMany(Array.from({ length: 10 }, line));
    expect(journal.stats().pendingBytes).toBe(10_000);
    // 11 000 bytes: drop to 9 000 minus the notice's 512 bytes = 8 488, i.e. 3 lines.
    journal.append(line());
    expect(journal.droppedCount()["log.debug"]).toBe(3);
    expect(all(journal).filter((e) => !isNotice(e))).toHaveLength(8);
    expect(journal.stats().pendingBytes).toBeLessThanOrEqual(10_000);
  });

  it("keeps a single notice through a long flood, and starts afresh once one is acked", () => {
    const journal = temp.open({ maxPendingEvents: 100 });
    for (let i = 0; i < 1_000; i++) {
      journal.append(log("debug", `line ${i}`));
      expect(journal.stats().pendingCount).toBeLessThanOrEqual(100);
    }
    const pending = all(journal);
    const notices = pending.filter(isNotice);
    expect(notices).toHaveLength(1);
    const kept = pending.length - 1;
    expect(journal.droppedCount()["log.debug"] + kept).toBe(1_000);
    expect(data(notices[0])["dropped"]).toMatchObject({ "log.debug": 1_000 - kept });
    // Exactly the newest lines survive.
    expect(pending.filter((e) => !isNotice(e)).map((e) => e.body["message"])).toEqual(
      Array.from({ length: kept }, (_, i) => `line ${1_000 - kept + i}`),
    );

    journal.ack(journal.nextEventSeq() - 1);
    journal.appendMany(Array.from({ length: 101 }, (_, i) => log("debug", `more ${i}`)));
    const fresh = all(journal).filter(isNotice);
    expect(fresh).toHaveLength(1);
    expect(data(fresh[0])["dropped"]).toMatchObject({ "log.debug": 12 });
    expect(data(fresh[0])["dropped_total"]).toMatchObject({ "log.debug": 1_000 - kept + 12 });
  });

  it("persists the dropped counts across restarts", () => {
    const journal = temp.open({ maxPendingEvents: 10 });
    journal.appendMany(Array.from({ length: 11 }, (_, i) => log("info", `line ${i}`)));
    expect(journal.droppedCount()["log.info"]).toBe(3);
    journal.close();
    expect(temp.open({ maxPendingEvents: 10 }).droppedCount()["log.info"]).toBe(3);
  });
});
