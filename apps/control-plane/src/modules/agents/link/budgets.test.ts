import { describe, expect, it } from "vitest";
import type { Event, LogEvent } from "@berth/protocol";
import { NOTICE_EVERY_MS, WINDOW_MS, createLogBudget, logBytes, noticeText } from "./budgets.ts";

const SERVER = "a3f1c2de-0000-4000-8000-000000000001";
const OTHER = "a3f1c2de-0000-4000-8000-000000000002";
const COMMAND = "3c5e7a91-2b4d-4f6e-8a0c-1d3f5b7e9a20";
const DEPLOYMENT = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d";
const TS = "2030-01-01T00:00:00.000Z";

let seq = 0;
const line = (message = "line", over: Partial<LogEvent> = {}): LogEvent => ({
  seq: ++seq,
  ts: TS,
  kind: "log",
  level: "info",
  command_id: COMMAND,
  deployment_id: DEPLOYMENT,
  step: "starting_container",
  message,
  ...over,
});
const step = (): Event => ({ seq: ++seq, ts: TS, kind: "step.finished", command_id: COMMAND, deployment_id: DEPLOYMENT, step: "starting_container" });
const result = (): Event => ({ seq: ++seq, ts: TS, kind: "command.result", command_id: COMMAND, ok: true });
const lines = (n: number) => Array.from({ length: n }, () => line());

function budget(linesPerMinute = 10, bytesPerMinute = 1_000_000) {
  let now = 1_000_000;
  const b = createLogBudget({ linesPerMinute, bytesPerMinute, now: () => now });
  return { b, advance: (ms: number) => (now += ms) };
}

describe("log budget", () => {
  it("passes a batch within the budget as it is, not copied", () => {
    const { b } = budget(10);
    const events = lines(10);
    const admitted = b.admit(SERVER, events);
    expect(admitted).toEqual({ events, dropped: 0, notice: null });
    expect(admitted.events).toBe(events);
  });

  it("drops the lines past the budget and puts a notice in the last dropped line's slot, with its ids", () => {
    const { b } = budget(3);
    const events = [line(), step(), line(), line(), line("over 1"), result(), line("over 2", { step: "health_check" }), step()];
    const admitted = b.admit(SERVER, events);
    expect(admitted.dropped).toBe(2);
    const over2 = events[6] as LogEvent;
    expect(admitted.notice).toEqual({
      seq: over2.seq,
      ts: over2.ts,
      kind: "log",
      level: "warning",
      command_id: COMMAND,
      deployment_id: DEPLOYMENT,
      step: "health_check",
      message: "2 log lines dropped: this server sent more than 3 lines (or 1 MiB) of logs a minute",
      data: { source: "log_budget", dropped: 2 },
    });
    // Every step and result kept, in order; the notice where "over 2" was; seqs still increasing.
    expect(admitted.events.map((e) => e.seq)).toEqual([events[0], events[1], events[2], events[3], events[5], events[6], events[7]].map((e) => e!.seq));
    expect(admitted.events[5]).toBe(admitted.notice);
    expect(admitted.events.filter((e) => e.kind !== "log")).toEqual(events.filter((e) => e.kind !== "log"));
  });

  it("never drops steps, command results or other kinds, however far over the budget", () => {
    const { b } = budget(1);
    b.admit(SERVER, lines(5));
    const others: Event[] = [step(), result(), { seq: ++seq, ts: TS, kind: "container.state", environment_id: DEPLOYMENT, container: "erp", state: "running" }];
    expect(b.admit(SERVER, others)).toEqual({ events: others, dropped: 0, notice: null });
  });

  it("counts bytes of message and data, and once a line does not fit drops the rest of the minute", () => {
    const { b } = budget(1000, 100);
    const fat = line("x".repeat(60), { data: { k: "v" } });
    expect(logBytes(fat)).toBe(60 + JSON.stringify({ k: "v" }).length);
    const admitted = b.admit(SERVER, [fat, line("y".repeat(60)), line("z")]);
    // The second does not fit (60 + 69 > 100); the small third one after it is dropped too.
    expect(admitted.events.map((e) => (e as LogEvent).message)).toEqual([fat.message, noticeText(2, { linesPerMinute: 1000, bytesPerMinute: 100 })]);
  });

  it("gives at most one notice every NOTICE_EVERY_MS, counting every line dropped since the last", () => {
    const { b, advance } = budget(2);
    expect(b.admit(SERVER, lines(5)).notice?.data).toEqual({ source: "log_budget", dropped: 3 });
    // A flood of one-line batches: dropped, acknowledged, and no notice each.
    for (let i = 0; i < 20; i++) {
      const one = lines(1);
      expect(b.admit(SERVER, one)).toEqual({ events: [], dropped: 1, notice: null });
      advance(100);
    }
    // 12 s later, still in the same minute: over budget, and a notice is due again.
    advance(NOTICE_EVERY_MS);
    const next = b.admit(SERVER, lines(2));
    expect(next.dropped).toBe(2);
    expect(next.notice?.data).toEqual({ source: "log_budget", dropped: 22 });
    expect(next.events).toEqual([next.notice]);
  });

  it("starts afresh each minute, and keeps each server's budget apart", () => {
    const { b, advance } = budget(2);
    expect(b.admit(SERVER, lines(3)).dropped).toBe(1);
    expect(b.admit(OTHER, lines(2)).dropped).toBe(0);
    advance(WINDOW_MS);
    expect(b.admit(SERVER, lines(2)).dropped).toBe(0);
    expect(b.admit(SERVER, lines(1)).dropped).toBe(1);
  });
});
