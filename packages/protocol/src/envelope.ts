// The frame envelope { v, type, id, ts, payload }: parsing untrusted text into a typed
// frame (never throwing), and encoding a typed frame into text.
import { randomUUID } from "node:crypto";
import { Type, type Static, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { eventOrderProblem, type EventBatch } from "./events.ts";
import { Timestamp, truncateMessage } from "./fields.ts";
import { isMessageType, MESSAGE_SCHEMAS, MESSAGE_TYPES, type MessageType, type Nack, type Payload } from "./messages.ts";
import { firstError, type SchemaCheck } from "./validation.ts";
import { HANDSHAKE_VERSION, PROTOCOL_VERSIONS } from "./versions.ts";

export const Envelope = Type.Object({
  v: Type.Integer({ minimum: 1 }),
  type: Type.String({ minLength: 1, maxLength: 64 }),
  /** Unique per sender; a nack names the refused frame by it. */
  id: Type.String({ minLength: 1, maxLength: 128 }),
  ts: Timestamp,
  payload: Type.Unknown(),
});
export type Envelope = Static<typeof Envelope>;

export type Frame<T extends MessageType = MessageType> = T extends MessageType
  ? { v: number; type: T; id: string; ts: string; payload: Payload<T> }
  : never;

export const FRAME_ERROR_CODES = [
  "invalid_json",
  "invalid_envelope",
  "unsupported_version",
  "unknown_type",
  "unexpected_type",
  "invalid_payload",
] as const;
export type FrameErrorCode = (typeof FRAME_ERROR_CODES)[number];

export interface FrameError {
  code: FrameErrorCode;
  message: string;
  /** The frame's id when it could be read, for the nack. */
  ref_id: string | null;
  /** The frame's type when it could be read. */
  type: string | null;
}

export type ParseResult = { ok: true; frame: Frame } | { ok: false; error: FrameError };

export interface ParseOptions {
  /** Versions accepted: all this build speaks before the handshake, the negotiated one after. */
  versions?: readonly number[];
  /** Types this receiver takes (e.g. AGENT_MESSAGE_TYPES); others are `unexpected_type`. */
  accept?: readonly MessageType[];
}

const checkEnvelope = Compile(Envelope);

// Compiled once at load; a frame check is then one generated function call.
const PAYLOAD_CHECKS = Object.fromEntries(
  MESSAGE_TYPES.map((type) => [type, Compile(MESSAGE_SCHEMAS[type] as TSchema) as SchemaCheck]),
) as Record<MessageType, SchemaCheck>;

/** Rules a schema cannot state; a reason when broken, else null. */
function payloadProblem(type: MessageType, payload: unknown): string | null {
  const check = PAYLOAD_CHECKS[type];
  if (!check.Check(payload)) return firstError(check, payload);
  if (type === "events") return eventOrderProblem(payload as EventBatch);
  return null;
}

/** Parses one text frame. Every failure is a result with a stable code, never an exception. */
export function parseFrame(text: string, options: ParseOptions = {}): ParseResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return fail("invalid_json", error instanceof Error ? error.message : "not JSON", null, null);
  }

  const refId = readString(raw, "id");
  const rawType = readString(raw, "type");
  if (!checkEnvelope.Check(raw)) {
    return fail("invalid_envelope", firstError(checkEnvelope, raw), refId, rawType);
  }
  const { v, type, id, ts, payload } = raw;

  const versions = options.versions ?? PROTOCOL_VERSIONS;
  if (!versions.includes(v)) {
    return fail("unsupported_version", `version ${v} not in [${versions.join(", ")}]`, id, type);
  }
  if (!isMessageType(type)) return fail("unknown_type", `unknown frame type "${type}"`, id, type);
  if (options.accept !== undefined && !options.accept.includes(type)) {
    return fail("unexpected_type", `frame type "${type}" is not accepted here`, id, type);
  }

  const problem = payloadProblem(type, payload);
  if (problem !== null) return fail("invalid_payload", `${type} payload ${problem}`, id, type);

  return { ok: true, frame: { v, type, id, ts, payload } as Frame };
}

export interface EncodeOptions {
  /** Defaults to a random UUID. */
  id?: string;
  /** Defaults to now. */
  ts?: string;
  /** Defaults to HANDSHAKE_VERSION, which is also the only version so far. */
  v?: number;
}

/**
 * Encodes one frame. Throws a TypeError when the payload breaks its schema: that is a bug
 * in the sender, and a peer would only nack it.
 */
export function encodeFrame<T extends MessageType>(type: T, payload: Payload<T>, options: EncodeOptions = {}): string {
  const problem = payloadProblem(type, payload);
  if (problem !== null) throw new TypeError(`encodeFrame: ${type} payload ${problem}`);
  const envelope: Envelope = {
    v: options.v ?? HANDSHAKE_VERSION,
    type,
    id: options.id ?? randomUUID(),
    ts: options.ts ?? new Date().toISOString(),
    payload,
  };
  if (!checkEnvelope.Check(envelope)) throw new TypeError(`encodeFrame: envelope ${firstError(checkEnvelope, envelope)}`);
  return JSON.stringify(envelope);
}

/** The nack that answers a frame that failed to parse. Do not send it when error.type is "nack". */
export function nackFor(error: FrameError): Nack {
  return { ref_id: error.ref_id, code: error.code, message: truncateMessage(error.message) };
}

function fail(code: FrameErrorCode, message: string, refId: string | null, type: string | null): ParseResult {
  return { ok: false, error: { code, message, ref_id: refId, type } };
}

function readString(value: unknown, key: string): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const field: unknown = (value as Record<string, unknown>)[key];
  return typeof field === "string" ? field : null;
}
