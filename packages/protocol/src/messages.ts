// Every frame type of the link, its payload schema, and which side may send it.
// Handshake: challenge -> hello -> ready; then commands down, events up (see PROTOCOL.md).
import { Type, type Static, type TSchema } from "typebox";
import { CommandRejectionCode, SignedCommand } from "./commands.ts";
import { EventBatch } from "./events.ts";
import { BASE64_PATTERN, Base64, LiteralUnion, Message, Nullable, Seq, SeqCursor, Timestamp, Uuid } from "./fields.ts";

/** First frame on every connection, control plane to agent. */
export const Challenge = Type.Object({
  /** At least 16 random bytes, base64; never reused. */
  nonce: Type.String({ pattern: BASE64_PATTERN, minLength: 24 }),
  /** Lets the agent notice clock skew, which command expiry depends on. */
  server_time: Timestamp,
});
export type Challenge = Static<typeof Challenge>;

/** The agent's answer to the challenge; proves it holds the key enrolled for server_id. */
export const Hello = Type.Object({
  server_id: Uuid,
  agent_version: Type.String({ minLength: 1, maxLength: 64 }),
  protocol_versions: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 32, uniqueItems: true }),
  /** Command types and optional features this agent supports, e.g. "logs.tail". */
  capabilities: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 256 }),
  /** Highest command seq in the agent's journal; 0 when it has none. */
  last_command_seq: SeqCursor,
  /** Seq the agent will give its next new event. */
  next_event_seq: Seq,
  /** `signChallenge(nonce, server_id, agentKey)`. */
  challenge_signature: Base64,
});
export type Hello = Static<typeof Hello>;

/** Handshake accepted; every later frame uses protocol_version. */
export const Ready = Type.Object({
  protocol_version: Type.Integer({ minimum: 1 }),
  /** Agent pings this often; two intervals without a frame mean the link is dead. */
  heartbeat_ms: Type.Integer({ minimum: 1_000, maximum: 300_000 }),
  /** Agent resends its journaled events from this seq (the last acknowledged + 1). */
  resend_from: Seq,
});
export type Ready = Static<typeof Ready>;

export const Ping = Type.Object({ ts: Timestamp });
export type Ping = Static<typeof Ping>;

/** Echoes the ping's ts so the agent can measure the round trip. */
export const Pong = Type.Object({ ts: Timestamp });
export type Pong = Static<typeof Pong>;

export const NACK_CODES = [
  "invalid_json",
  "invalid_envelope",
  "unsupported_version",
  "unknown_type",
  "invalid_payload",
  /** Known type, wrong moment: before the handshake ends, or sent by the wrong side. */
  "unexpected_type",
  /** Challenge signature does not verify, or the server id is not enrolled. */
  "auth_failed",
  "no_common_version",
] as const;
export type NackCode = (typeof NACK_CODES)[number];
export const NackCode = LiteralUnion(NACK_CODES);

/** A frame was refused. Never answered with another nack, so two peers cannot loop. */
export const Nack = Type.Object({
  /** Envelope id of the refused frame; null when it could not be read. */
  ref_id: Nullable(Type.String()),
  code: NackCode,
  message: Message,
});
export type Nack = Static<typeof Nack>;

/** Stop a running command if possible. Unsigned: it can only stop work, never start any. */
export const CommandCancel = Type.Object({ command_id: Uuid });
export type CommandCancel = Static<typeof CommandCancel>;

/** The command is verified and in the agent's journal; the control plane may drop it from its outbox. */
export const CommandAccepted = Type.Object({ command_id: Uuid, seq: Seq });
export type CommandAccepted = Static<typeof CommandAccepted>;

/** The command will never run. */
export const CommandRejected = Type.Object({
  command_id: Uuid,
  code: CommandRejectionCode,
  message: Message,
});
export type CommandRejected = Static<typeof CommandRejected>;

/** Cumulative: every event with seq <= up_to_seq is stored and may leave the agent's journal. */
export const EventsAck = Type.Object({ up_to_seq: SeqCursor });
export type EventsAck = Static<typeof EventsAck>;

export const MESSAGE_SCHEMAS = {
  challenge: Challenge,
  hello: Hello,
  ready: Ready,
  ping: Ping,
  pong: Pong,
  nack: Nack,
  command: SignedCommand,
  "command.cancel": CommandCancel,
  "command.accepted": CommandAccepted,
  "command.rejected": CommandRejected,
  events: EventBatch,
  "events.ack": EventsAck,
} as const satisfies Record<string, TSchema>;

export type MessageType = keyof typeof MESSAGE_SCHEMAS;
export type Payload<T extends MessageType> = Static<(typeof MESSAGE_SCHEMAS)[T]>;

export const MESSAGE_TYPES = Object.keys(MESSAGE_SCHEMAS) as MessageType[];

export function isMessageType(type: string): type is MessageType {
  return Object.hasOwn(MESSAGE_SCHEMAS, type);
}

/** Frames the control plane sends; pass to `parseFrame` on the agent side. */
export const CONTROL_PLANE_MESSAGE_TYPES = [
  "challenge",
  "ready",
  "pong",
  "nack",
  "command",
  "command.cancel",
  "events.ack",
] as const satisfies readonly MessageType[];

/** Frames the agent sends; pass to `parseFrame` on the control-plane side. */
export const AGENT_MESSAGE_TYPES = [
  "hello",
  "ping",
  "nack",
  "command.accepted",
  "command.rejected",
  "events",
] as const satisfies readonly MessageType[];

/** Types valid on either side before `ready`; anything else then is `unexpected_type`. */
export const HANDSHAKE_MESSAGE_TYPES = ["challenge", "hello", "ready", "nack"] as const satisfies readonly MessageType[];

/**
 * The largest frame the control plane reads before `ready` (a hello is under 2 KiB); a
 * larger one closes the link with `too_large` (1009) before it is buffered.
 */
export const MAX_HANDSHAKE_FRAME_BYTES = 64 * 1024;

/** The largest frame the control plane reads after `ready` (the agent's batches stop growing at 1 MiB). */
export const MAX_AGENT_FRAME_BYTES = 4 * 1024 * 1024;
