import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, nackFor, parseFrame, type FrameErrorCode } from "./envelope.ts";
import { MAX_MESSAGE_LENGTH } from "./fields.ts";
import { AGENT_MESSAGE_TYPES, CONTROL_PLANE_MESSAGE_TYPES, MESSAGE_TYPES, type Hello } from "./messages.ts";
import { signCommand } from "./signing.ts";
import { controlPlaneKey, controlPlaneKeyId, SERVER_ID, unsignedDeploy } from "./test-fixtures.ts";

const TS = "2025-03-01T12:00:00.000Z";
const hello: Hello = {
  server_id: SERVER_ID,
  agent_version: "0.1.0",
  protocol_versions: [1],
  capabilities: ["deploy", "logs.tail"],
  last_command_seq: 0,
  next_event_seq: 1,
  challenge_signature: Buffer.alloc(64).toString("base64"),
};

function frame(fields: Record<string, unknown>): string {
  return JSON.stringify({ v: 1, type: "hello", id: "f-1", ts: TS, payload: hello, ...fields });
}

function errorCode(text: string, options?: Parameters<typeof parseFrame>[1]): FrameErrorCode | "ok" {
  const result = parseFrame(text, options);
  return result.ok ? "ok" : result.error.code;
}

describe("encodeFrame / parseFrame", () => {
  it("round-trips a frame with its envelope fields", () => {
    const text = encodeFrame("hello", hello, { id: "f-1", ts: TS });
    expect(JSON.parse(text)).toEqual({ v: 1, type: "hello", id: "f-1", ts: TS, payload: hello });
    expect(parseFrame(text)).toEqual({ ok: true, frame: { v: 1, type: "hello", id: "f-1", ts: TS, payload: hello } });
  });

  it("fills in a random id and the current time", () => {
    const a = JSON.parse(encodeFrame("ping", { ts: TS })) as { id: string; ts: string };
    const b = JSON.parse(encodeFrame("ping", { ts: TS })) as { id: string; ts: string };
    expect(a.id).not.toBe(b.id);
    expect(Math.abs(Date.parse(a.ts) - Date.now())).toBeLessThan(5_000);
  });

  it("narrows the payload by type", () => {
    const result = parseFrame(encodeFrame("events.ack", { up_to_seq: 7 }));
    expect(result.ok).toBe(true);
    if (result.ok && result.frame.type === "events.ack") expect(result.frame.payload.up_to_seq).toBe(7);
  });

  it("carries a signed command", () => {
    const cmd = signCommand(unsignedDeploy(), controlPlaneKey, controlPlaneKeyId);
    const result = parseFrame(encodeFrame("command", cmd));
    expect(result).toMatchObject({ ok: true, frame: { type: "command", payload: cmd } });
  });

  it("refuses to encode a payload that breaks its schema", () => {
    expect(() => encodeFrame("events.ack", { up_to_seq: -1 })).toThrow(/up_to_seq/);
    expect(() => encodeFrame("ping", { ts: "yesterday" })).toThrow(TypeError);
    expect(() => encodeFrame("ping", { ts: TS }, { id: "" })).toThrow(/envelope/);
  });
});

describe("parseFrame errors", () => {
  it.each<[string, string, FrameErrorCode]>([
    ["not JSON", "{", "invalid_json"],
    ["empty text", "", "invalid_json"],
    ["a JSON number", "42", "invalid_envelope"],
    ["a JSON array", "[]", "invalid_envelope"],
    ["null", "null", "invalid_envelope"],
    ["no payload", JSON.stringify({ v: 1, type: "hello", id: "f-1", ts: TS }), "invalid_envelope"],
    ["no id", frame({ id: undefined }), "invalid_envelope"],
    ["an empty id", frame({ id: "" }), "invalid_envelope"],
    ["a bad timestamp", frame({ ts: "now" }), "invalid_envelope"],
    ["a string version", frame({ v: "1" }), "invalid_envelope"],
    ["a fractional version", frame({ v: 1.5 }), "invalid_envelope"],
    ["a numeric type", frame({ type: 3 }), "invalid_envelope"],
    ["a future version", frame({ v: 2 }), "unsupported_version"],
    ["an unknown type", frame({ type: "hello.v2" }), "unknown_type"],
    ["an inherited property name as type", frame({ type: "toString" }), "unknown_type"],
    ["a payload of the wrong shape", frame({ payload: { ...hello, server_id: "not-a-uuid" } }), "invalid_payload"],
    ["a missing payload field", frame({ payload: { ...hello, capabilities: undefined } }), "invalid_payload"],
    ["a null payload", frame({ payload: null }), "invalid_payload"],
  ])("reports %s", (_name, text, code) => {
    expect(errorCode(text)).toBe(code);
  });

  it("keeps the frame id and type for the nack when it can read them", () => {
    const result = parseFrame(frame({ type: "hello.v2", id: "f-9" }));
    expect(result).toEqual({
      ok: false,
      error: { code: "unknown_type", message: 'unknown frame type "hello.v2"', ref_id: "f-9", type: "hello.v2" },
    });
    if (!result.ok) {
      expect(nackFor(result.error)).toEqual({ ref_id: "f-9", code: "unknown_type", message: result.error.message });
      expect(() => encodeFrame("nack", nackFor(result.error))).not.toThrow();
    }
    const broken = parseFrame(JSON.stringify({ id: "f-3", type: "ping" }));
    expect(broken).toMatchObject({ ok: false, error: { code: "invalid_envelope", ref_id: "f-3", type: "ping" } });
    expect(parseFrame("{")).toMatchObject({ ok: false, error: { ref_id: null, type: null } });
  });

  it("names the offending field of an invalid payload", () => {
    const result = parseFrame(frame({ payload: { ...hello, next_event_seq: 0 } }));
    expect(result).toMatchObject({ ok: false, error: { code: "invalid_payload" } });
    if (!result.ok) expect(result.error.message).toContain("/next_event_seq");
  });

  it("accepts only the versions it is given", () => {
    expect(errorCode(frame({ v: 1 }), { versions: [2] })).toBe("unsupported_version");
    expect(errorCode(frame({ v: 2 }), { versions: [1, 2] })).toBe("ok");
  });

  it("refuses known types the receiver does not take", () => {
    expect(errorCode(frame({}), { accept: CONTROL_PLANE_MESSAGE_TYPES })).toBe("unexpected_type");
    expect(errorCode(frame({}), { accept: AGENT_MESSAGE_TYPES })).toBe("ok");
  });

  it("refuses an events batch whose seqs do not increase", () => {
    const event = (seq: number) => ({ seq, ts: TS, kind: "container.state", environment_id: SERVER_ID, container: "erp", state: "running" });
    expect(errorCode(frame({ type: "events", payload: { events: [event(1), event(2)] } }))).toBe("ok");
    expect(errorCode(frame({ type: "events", payload: { events: [event(2), event(2)] } }))).toBe("invalid_payload");
    expect(errorCode(frame({ type: "events", payload: { events: [] } }))).toBe("invalid_payload");
  });

});

describe("parseFrame properties", () => {
  it("never throws on arbitrary text", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "grapheme" })), (text) => {
        expect(parseFrame(text).ok).toBe(false);
      }),
    );
  });

  it("never throws on arbitrary JSON, in or out of an envelope", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(...MESSAGE_TYPES, "nope"), (value, type) => {
        expect(() => parseFrame(JSON.stringify(value))).not.toThrow();
        expect(() => parseFrame(frame({ type, payload: value }))).not.toThrow();
      }),
    );
  });
});

describe("bounded messages on the link", () => {
  it("a nack's message is cut to MAX_MESSAGE_LENGTH, and a longer rejection is refused", () => {
    const nack = nackFor({ code: "invalid_payload", message: "x".repeat(MAX_MESSAGE_LENGTH * 2), ref_id: null, type: null });
    expect(nack.message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(nack.message).toMatch(/…\[truncated \d+ characters\]$/);
    expect(() => encodeFrame("nack", nack)).not.toThrow();
    const frame = encodeFrame("command.rejected", { command_id: "5d3c3a34-1b67-4d43-8a6e-8b2c6c1d9f10", code: "expired", message: "short" }, { v: 1 });
    const long = frame.replace('"short"', JSON.stringify("y".repeat(MAX_MESSAGE_LENGTH + 1)));
    expect(parseFrame(long, { versions: [1], accept: ["command.rejected"] }).ok).toBe(false);
    expect(parseFrame(frame, { versions: [1], accept: ["command.rejected"] }).ok).toBe(true);
  });
});
