import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import { FRAME_ERROR_CODES } from "./envelope.ts";
import {
  AGENT_MESSAGE_TYPES,
  Challenge,
  CONTROL_PLANE_MESSAGE_TYPES,
  HANDSHAKE_MESSAGE_TYPES,
  Hello,
  MESSAGE_TYPES,
  NACK_CODES,
  Ready,
} from "./messages.ts";

const TS = "2025-03-01T12:00:00.000Z";

describe("message schemas", () => {
  it("accepts a challenge of at least 16 random bytes", () => {
    expect(Value.Check(Challenge, { nonce: Buffer.alloc(16).toString("base64"), server_time: TS })).toBe(true);
    expect(Value.Check(Challenge, { nonce: Buffer.alloc(8).toString("base64"), server_time: TS })).toBe(false);
    expect(Value.Check(Challenge, { nonce: "not base64 at all!!!!!!!!", server_time: TS })).toBe(false);
  });

  it("requires at least one distinct protocol version in hello", () => {
    const hello = {
      server_id: "6f1c2a4e-8d3b-4c7a-9e15-2b7d4f0a9c31",
      agent_version: "0.1.0",
      protocol_versions: [1],
      capabilities: [],
      last_command_seq: 0,
      next_event_seq: 1,
      challenge_signature: Buffer.alloc(64).toString("base64"),
    };
    expect(Value.Check(Hello, hello)).toBe(true);
    expect(Value.Check(Hello, { ...hello, protocol_versions: [] })).toBe(false);
    expect(Value.Check(Hello, { ...hello, protocol_versions: [1, 1] })).toBe(false);
    expect(Value.Check(Hello, { ...hello, server_id: hello.server_id.toUpperCase() })).toBe(false);
  });

  it("bounds the heartbeat interval", () => {
    expect(Value.Check(Ready, { protocol_version: 1, heartbeat_ms: 15_000, resend_from: 1 })).toBe(true);
    expect(Value.Check(Ready, { protocol_version: 1, heartbeat_ms: 10, resend_from: 1 })).toBe(false);
    expect(Value.Check(Ready, { protocol_version: 1, heartbeat_ms: 15_000, resend_from: 0 })).toBe(false);
  });

  it("tolerates fields a newer peer adds", () => {
    expect(Value.Check(Ready, { protocol_version: 1, heartbeat_ms: 15_000, resend_from: 1, lease_ms: 5 })).toBe(true);
  });
});

describe("message registry", () => {
  it("has every type sent by at least one side", () => {
    const sent = new Set<string>([...AGENT_MESSAGE_TYPES, ...CONTROL_PLANE_MESSAGE_TYPES]);
    expect(MESSAGE_TYPES.filter((type) => !sent.has(type))).toEqual([]);
    expect(HANDSHAKE_MESSAGE_TYPES.every((type) => MESSAGE_TYPES.includes(type))).toBe(true);
  });

  it("can nack every frame error", () => {
    expect(FRAME_ERROR_CODES.filter((code) => !(NACK_CODES as readonly string[]).includes(code))).toEqual([]);
  });
});
