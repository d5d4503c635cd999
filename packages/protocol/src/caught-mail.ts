// A mail that a staging or development ERP sent and the server's catcher kept (the agent's
// mail/ folder): what the agent reports of it in a mail.caught event, and the bounds of
// that report. The parts the APIs show (HTML, text, headers, attachments' names) travel;
// attachments' bytes do not (nobody reads them there, and they would crowd the link).
import { Type } from "typebox";
import { Nullable, Timestamp, Uuid } from "./fields.ts";

/** The largest message the catcher accepts (SMTP SIZE); a larger one is refused with 552. */
export const MAX_CAUGHT_MAIL_BYTES = 10 * 1024 * 1024;
/** HTML and text parts are cut to this many characters each (`truncated` says so). */
export const MAX_CAUGHT_PART_LENGTH = 256 * 1024;
export const MAX_CAUGHT_HEADERS = 100;
export const MAX_CAUGHT_HEADER_LENGTH = 2048;
export const MAX_CAUGHT_RECIPIENTS = 100;
export const MAX_CAUGHT_ATTACHMENTS = 100;
/** RFC 5322's line limit bounds an address or a subject. */
const Line = Type.String({ maxLength: 998 });

export const CaughtAttachment = Type.Object({
  filename: Nullable(Type.String({ maxLength: 255 })),
  content_type: Type.String({ maxLength: 255 }),
  size: Type.Integer({ minimum: 0 }),
});

/** The fields of a mail.caught event (events.ts). */
export const CAUGHT_MAIL_FIELDS = {
  /** Made by the agent: resending the event stores the mail once. */
  mail_id: Uuid,
  environment_id: Uuid,
  received_at: Timestamp,
  /** The From header (the envelope's sender when it has none). */
  from: Line,
  /** The envelope's recipients: where the ERP asked the mail to go. */
  to: Type.Array(Line, { maxItems: MAX_CAUGHT_RECIPIENTS }),
  subject: Line,
  /** The message's size in bytes, as received. */
  size: Type.Integer({ minimum: 0, maximum: MAX_CAUGHT_MAIL_BYTES }),
  html: Nullable(Type.String({ maxLength: MAX_CAUGHT_PART_LENGTH })),
  text: Nullable(Type.String({ maxLength: MAX_CAUGHT_PART_LENGTH })),
  /** The HTML or the text part was cut to MAX_CAUGHT_PART_LENGTH. */
  truncated: Type.Boolean(),
  headers: Type.Array(
    Type.Object({ name: Type.String({ maxLength: 200 }), value: Type.String({ maxLength: MAX_CAUGHT_HEADER_LENGTH }) }),
    { maxItems: MAX_CAUGHT_HEADERS },
  ),
  attachments: Type.Array(CaughtAttachment, { maxItems: MAX_CAUGHT_ATTACHMENTS }),
};
