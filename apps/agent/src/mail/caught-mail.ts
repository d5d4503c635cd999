// A received message as the agent reports it (the protocol's mail.caught fields): parsed by
// mailparser (Nodemailer's), every part bounded so the event always passes the protocol's
// schema, whatever an ERP sends. Attachments are named and measured, never carried.
import { randomUUID } from "node:crypto";
import { simpleParser, type AddressObject } from "mailparser";
import {
  MAX_CAUGHT_ATTACHMENTS,
  MAX_CAUGHT_HEADER_LENGTH,
  MAX_CAUGHT_HEADERS,
  MAX_CAUGHT_PART_LENGTH,
  MAX_CAUGHT_RECIPIENTS,
  type EventInput,
} from "@berth/protocol";

type MailCaught = Extract<EventInput, { kind: "mail.caught" }>;

export interface Envelope {
  environmentId: string;
  /** MAIL FROM, "" for a null sender. */
  sender: string;
  /** RCPT TO, in order. */
  recipients: string[];
  receivedAt: Date;
}

const cut = (text: string, max: number) => (text.length > max ? text.slice(0, max) : text);
const line = (text: string) => cut(text.replace(/[\r\n]+/g, " "), 998);

export async function caughtMail(raw: Buffer, envelope: Envelope): Promise<MailCaught> {
  // No attachment bodies are kept in memory beyond the parse; skipHtmlToText: the text part
  // is what the ERP sent, not one made up from its HTML.
  const parsed = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true });
  const html = typeof parsed.html === "string" ? parsed.html : null;
  const text = parsed.text ?? null;
  const headers = parsed.headerLines.slice(0, MAX_CAUGHT_HEADERS).map((h) => {
    const colon = h.line.indexOf(":");
    return {
      name: cut(colon > 0 ? h.line.slice(0, colon) : h.key, 200),
      value: cut((colon > 0 ? h.line.slice(colon + 1) : h.line).replace(/\r?\n[ \t]+/g, " ").trim(), MAX_CAUGHT_HEADER_LENGTH),
    };
  });
  return {
    kind: "mail.caught",
    mail_id: randomUUID(),
    environment_id: envelope.environmentId,
    received_at: envelope.receivedAt.toISOString(),
    from: line(addressText(parsed.from) ?? envelope.sender),
    to: envelope.recipients.slice(0, MAX_CAUGHT_RECIPIENTS).map(line),
    subject: line(parsed.subject ?? ""),
    size: raw.length,
    html: html === null ? null : cut(html, MAX_CAUGHT_PART_LENGTH),
    text: text === null ? null : cut(text, MAX_CAUGHT_PART_LENGTH),
    truncated: (html?.length ?? 0) > MAX_CAUGHT_PART_LENGTH || (text?.length ?? 0) > MAX_CAUGHT_PART_LENGTH,
    headers,
    attachments: parsed.attachments.slice(0, MAX_CAUGHT_ATTACHMENTS).map((a) => ({
      filename: a.filename === undefined ? null : cut(a.filename, 255),
      content_type: cut(a.contentType, 255),
      size: a.size,
    })),
  };
}

function addressText(from: AddressObject | AddressObject[] | undefined): string | undefined {
  if (from === undefined) return undefined;
  return (Array.isArray(from) ? from.map((a) => a.text).join(", ") : from.text) || undefined;
}
