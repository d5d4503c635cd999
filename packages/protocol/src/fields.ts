// Field schemas shared by several messages. Patterns rather than `format` keep the
// schemas free of TypeBox's global format registry, so importing them changes nothing.
import { Type, type TSchema } from "typebox";

/** Lowercase only: ids are compared as strings (journal, outbox, replay checks). */
export const UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/** ISO 8601 / RFC 3339 date-time with seconds and an explicit offset. */
export const TIMESTAMP_PATTERN =
  "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?(?:Z|[+-]\\d{2}:\\d{2})$";

export const BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

export const Uuid = Type.String({ pattern: UUID_PATTERN });
export const Timestamp = Type.String({ pattern: TIMESTAMP_PATTERN });
export const Base64 = Type.String({ pattern: BASE64_PATTERN });

/** Sequence numbers start at 1; 0 in a cursor field means "nothing yet". */
export const Seq = Type.Integer({ minimum: 1 });
export const SeqCursor = Type.Integer({ minimum: 0 });

/**
 * The longest text an event's message may be (a log line, a step's message, an error's
 * message), in UTF-16 code units: JavaScript's string length, which is what the schemas
 * check. The agent truncates longer text before it journals the event (a batch holding an
 * event over the limit is refused, and would be refused on every resend).
 */
export const MAX_MESSAGE_LENGTH = 8192;

/** `text` if it fits in `max` characters, else its start and a note of how much was cut. */
export function truncateMessage(text: string, max = MAX_MESSAGE_LENGTH): string {
  if (text.length <= max) return text;
  // The note's length depends on the count it states: room is made for the largest count
  // possible, the whole text's length (the count stated is smaller, so the result fits).
  let keep = Math.max(0, max - note(text.length).length);
  // Never half of a surrogate pair: a lone surrogate is not valid Unicode once stored.
  const last = text.charCodeAt(keep - 1);
  if (keep > 0 && last >= 0xd800 && last <= 0xdbff) keep -= 1;
  return text.slice(0, keep) + note(text.length - keep);
}

const note = (cut: number) => `…[truncated ${cut} characters]`;

/** A human-readable message of an event: at most MAX_MESSAGE_LENGTH characters. */
export const Message = Type.String({ maxLength: MAX_MESSAGE_LENGTH });

/** Stable machine-readable code plus a human message, as in every Berth error. */
export const ErrorBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 64 }),
  message: Message,
});

export const JsonObject = Type.Record(Type.String(), Type.Unknown());

/**
 * One of the given strings: an anyOf of consts (Type.Union of Type.Literal), typed as their
 * union (typebox 1 types a Union of a mapped array, not a tuple, as never).
 */
export function LiteralUnion<const T extends readonly string[]>(values: T) {
  return Type.Unsafe<T[number]>(Type.Union(values.map((value) => Type.Literal(value))));
}

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}
