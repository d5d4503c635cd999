// Messages cut to the protocol's limit before they are journalled, so no event the agent
// writes can get its batch refused by the control plane.
import { describe, expect, it } from "vitest";
import { Event, MAX_MESSAGE_LENGTH, truncateMessage, type EventInput } from "@berth/protocol";
import { Value } from "typebox/value";
import type { JournalEvent } from "../journal/journal-types.ts";
import { withBoundedMessages } from "./bounded-messages.ts";
import { createEventOutbox } from "./event-outbox.ts";
import { toWireEvent } from "./wire-events.ts";

const COMMAND_ID = "3c5e7a91-2b4d-4f6e-8a0c-1d3f5b7e9a20";
const DEPLOYMENT_ID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d";
const numbered = (event: EventInput) => ({ ...event, seq: 1, ts: "2030-01-01T00:00:00.000Z" });

describe("truncateMessage", () => {
  it("leaves a message that fits as it is", () => {
    expect(truncateMessage("short")).toBe("short");
    const longest = "x".repeat(MAX_MESSAGE_LENGTH);
    expect(truncateMessage(longest)).toBe(longest);
  });

  it("cuts a longer one to exactly the limit, saying how many characters went", () => {
    for (const length of [MAX_MESSAGE_LENGTH + 1, MAX_MESSAGE_LENGTH + 999, 10 * MAX_MESSAGE_LENGTH, 3_000_000]) {
      const text = "a".repeat(length);
      const cut = truncateMessage(text);
      expect(cut.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
      const [, kept, count] = /^(a*)…\[truncated (\d+) characters\]$/.exec(cut) ?? [];
      expect(kept).toBeDefined();
      // What was kept and what the note counts add up to the original.
      expect(kept!.length + Number(count)).toBe(length);
    }
  });

  it("never keeps half of a surrogate pair", () => {
    // The cut would fall between the two halves of the last emoji kept.
    const room = MAX_MESSAGE_LENGTH - "…[truncated 20000 characters]".length;
    const text = "a".repeat(room - 1) + "😀".repeat(10_000);
    const cut = truncateMessage(text);
    expect(cut.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(cut).toBe("a".repeat(room - 1) + `…[truncated ${text.length - (room - 1)} characters]`);
    // Through UTF-8 and back unchanged: no lone surrogate became U+FFFD.
    expect(Buffer.from(cut).toString()).toBe(cut);
  });
});

describe("events are journalled with bounded messages", () => {
  const huge = "e".repeat(MAX_MESSAGE_LENGTH * 3);
  const events: EventInput[] = [
    { kind: "log", level: "info", command_id: COMMAND_ID, deployment_id: DEPLOYMENT_ID, step: "starting_container", message: huge },
    { kind: "step.started", command_id: COMMAND_ID, deployment_id: DEPLOYMENT_ID, step: "pulling_image", message: huge },
    { kind: "step.finished", command_id: COMMAND_ID, deployment_id: null, step: "completed", message: huge },
    { kind: "step.failed", command_id: COMMAND_ID, deployment_id: DEPLOYMENT_ID, step: "health_check", message: huge, error: { code: "health_check_failed", message: huge } },
    { kind: "command.result", command_id: COMMAND_ID, ok: false, error: { code: "image_pull_failed", message: huge } },
  ];

  it.each(events.map((e) => [e.kind, e] as const))("%s: too long for the protocol as sent, valid once bounded", (_kind, event) => {
    expect(Value.Check(Event, numbered(event))).toBe(false);
    const bounded = withBoundedMessages(event);
    expect(Value.Check(Event, numbered(bounded))).toBe(true);
    expect(JSON.stringify(bounded)).toContain(`…[truncated ${huge.length - (MAX_MESSAGE_LENGTH - `…[truncated ${huge.length} characters]`.length)} characters]`);
  });

  it("an event within the limits is the same object (nothing copied on the log hot path)", () => {
    const line: EventInput = { kind: "log", level: "info", command_id: null, deployment_id: null, step: null, message: "fine" };
    expect(withBoundedMessages(line)).toBe(line);
  });

  it("the outbox journals a huge log line truncated, not refused", () => {
    const written: { kind: string; body: Record<string, unknown> }[] = [];
    const outbox = createEventOutbox({
      append(input) {
        written.push(input as never);
        return { seq: 1, ts: "2030-01-01T00:00:00.000Z", kind: input.kind, level: input.level ?? null, body: input.body } as JournalEvent;
      },
    });
    outbox.append(events[0]!);
    expect(written).toHaveLength(1);
    const message = written[0]!.body.message as string;
    expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(message.startsWith("eeee")).toBe(true);
    expect(message).toMatch(/…\[truncated \d+ characters\]$/);
  });

  it("a row journalled whole by an older agent is sent truncated, not replaced by an error line", () => {
    const row: JournalEvent = { seq: 4, ts: "2030-01-01T00:00:00.000Z", kind: "log", level: "warning", body: { command_id: null, deployment_id: null, step: null, message: huge } };
    const wire = toWireEvent(row);
    expect(wire).toMatchObject({ seq: 4, kind: "log", level: "warning" });
    expect((wire as { message: string }).message).toMatch(/^e+…\[truncated \d+ characters\]$/);
    expect(Value.Check(Event, wire)).toBe(true);
  });
});
