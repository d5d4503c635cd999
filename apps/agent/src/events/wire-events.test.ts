// The mapping between the protocol's flat events and the journal's rows.
import { describe, expect, it } from "vitest";
import type { EventInput } from "@berth/protocol";
import { eventProblem, toJournalInput, toWireEvent } from "./wire-events.ts";

describe("wire events", () => {
  it("round-trips a log event through a journal row, level included", () => {
    const log: EventInput = {
      kind: "log",
      level: "warning",
      command_id: null,
      deployment_id: null,
      step: "pulling_image",
      message: "slow registry",
      data: { attempt: 2 },
    };
    const input = toJournalInput(log);
    expect(input).toEqual({
      kind: "log",
      level: "warning",
      body: { command_id: null, deployment_id: null, step: "pulling_image", message: "slow registry", data: { attempt: 2 } },
    });
    const row = { seq: 7, ts: "2030-01-01T00:00:00.000Z", kind: input.kind, level: input.level ?? null, body: input.body };
    expect(toWireEvent(row)).toEqual({ ...log, seq: 7, ts: "2030-01-01T00:00:00.000Z" });
  });

  it("says what is wrong with an event before it is journalled", () => {
    expect(eventProblem({ kind: "stats", cpu_percent: 120 } as unknown as EventInput)).toMatch(/cpu_percent|\//);
    expect(
      eventProblem({ kind: "command.result", command_id: "00000000-0000-4000-8000-000000000000", ok: true }),
    ).toBeNull();
  });

  it("replaces a row that no longer passes the schema by an error line under the same seq", () => {
    const row = { seq: 9, ts: "2030-01-01T00:00:00.000Z", kind: "stats", level: null, body: { cpu_percent: "high" } };
    expect(toWireEvent(row)).toMatchObject({ seq: 9, kind: "log", level: "error", message: expect.stringContaining("event 9 (stats)") });
  });
});
