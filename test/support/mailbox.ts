// A real SMTP receiver on 127.0.0.1 for tests (smtp-server, the SMTP server library of the
// nodemailer project): the control plane sends to it over SMTP as it would to any mail
// server, and each message is parsed (mailparser) and kept by recipient.
import type { AddressInfo } from "node:net";
import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { waitUntil } from "./wait.ts";

export interface ReceivedMail {
  to: string[];
  from: string;
  subject: string;
  text: string;
}

export class Mailbox {
  readonly mails: ReceivedMail[] = [];
  /** While set, the server answers every message with this SMTP error (a mail server in trouble). */
  refuseWith: string | null = null;
  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  static async start(): Promise<Mailbox> {
    // Set once listening; the server's callbacks only run after that.
    const ref: { box?: Mailbox } = {};
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onData(stream, session, callback) {
        if (ref.box?.refuseWith) {
          stream.resume();
          stream.on("end", () => callback(Object.assign(new Error(ref.box!.refuseWith!), { responseCode: 451 })));
          return;
        }
        simpleParser(stream)
          .then((parsed) => {
            ref.box!.mails.push({
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
              subject: parsed.subject ?? "",
              text: parsed.text ?? "",
            });
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    ref.box = new Mailbox(server, (server.server.address() as AddressInfo).port);
    return ref.box;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The latest message to the address, waiting for it to arrive. */
  async latestTo(address: string, after = 0): Promise<ReceivedMail> {
    const find = () => this.mails.slice(after).filter((m) => m.to.includes(address.toLowerCase())).at(-1);
    await waitUntil(`mail to ${address}`, () => find() !== undefined, { timeoutMs: 10_000, intervalMs: 20 });
    return find()!;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The invitation token in a mail's link (…/#/invite/<token>). */
export function invitationToken(mail: ReceivedMail): string {
  const m = /#\/invite\/(bin_[A-Za-z0-9_-]+)/.exec(mail.text);
  if (!m) throw new Error(`no invitation link in: ${mail.text}`);
  return m[1]!;
}
