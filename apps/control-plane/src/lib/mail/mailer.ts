// The outgoing-mail port: what Berth sends people (invitations). Two implementations behind
// it: SMTP, through nodemailer (a maintained client that speaks SMTP with STARTTLS, AUTH and
// pooling, rather than a hand-written one), and a development mode that writes each message
// to the log, so an invitation link can be followed without a mail server.
import nodemailer from "nodemailer";
import { DomainError } from "../errors.ts";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Sends the message, or throws mail_unavailable (the server refused it or cannot be reached). */
  send(message: MailMessage): Promise<void>;
  readonly kind: "smtp" | "log";
  close(): void;
}

export interface MailSettings {
  /** smtp://user:password@host:port or smtps://…; none: log mode. */
  smtpUrl?: string | undefined;
  from: string;
}

/** For processes that send no mail (scripts, benchmarks): every send is refused. */
export const NO_MAIL: Mailer = {
  kind: "log",
  async send() {
    throw new DomainError("mail_unavailable", "This process sends no mail");
  },
  close() {},
};

export function createMailer(settings: MailSettings, log: { info(o: object, m: string): void; warn(o: object, m: string): void }): Mailer {
  if (!settings.smtpUrl) {
    return {
      kind: "log",
      async send(message) {
        log.info({ mail: { to: message.to, subject: message.subject, text: message.text } }, "mail (no BERTH_SMTP_URL: written here instead of sent)");
      },
      close() {},
    };
  }
  const transport = nodemailer.createTransport(settings.smtpUrl);
  return {
    kind: "smtp",
    async send(message) {
      try {
        await transport.sendMail({ from: settings.from, to: message.to, subject: message.subject, text: message.text });
      } catch (err) {
        // The server's own words stay in our log; the caller learns only that mail is down.
        log.warn({ err, to: message.to }, "sending mail failed");
        throw new DomainError("mail_unavailable", "The mail server could not take the message; nothing was sent. Try again later");
      }
    },
    close: () => transport.close(),
  };
}
