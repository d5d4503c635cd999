// The server's mail catcher: one small SMTP server, in the agent's own process, where every
// staging and development ERP of this server sends its mail (odoo.conf's smtp_* options, see
// executor/deploy/erp-config.ts). Nothing it receives is delivered: each message is parsed
// and journalled as a mail.caught event, which the link sends to the control plane like any
// event, so nothing is lost while the link is down and the APIs answer while the server is
// offline.
//
// Why in the agent (Nodemailer's smtp-server and mailparser, both well kept): no image to
// build, ship or pull, and the message goes straight into the journal, with no mailbox
// files to sweep. It listens only on the host side of a Berth network's bridge (mail-network.ts):
// ERP containers reach that address through their own bridge's gateway, the outside does not.
//
// Every message needs AUTH as an environment (mail-credentials.ts): the login says whose box
// it goes to. Plain AUTH without TLS: the traffic never leaves this host, and Odoo's default
// (smtp_ssl False) speaks no TLS.
import { SMTPServer, type SMTPServerAuthentication, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import { MAX_CAUGHT_MAIL_BYTES, type EventInput } from "@berth/protocol";
import { caughtMail } from "./caught-mail.ts";
import { checkMailLogin } from "./mail-credentials.ts";

export interface MailCatcherServerDeps {
  stateDir: string;
  /** Journals the event (the agent's outbox). */
  emit(event: EventInput): void;
  now?: () => Date;
  /** Largest message accepted, bytes (default MAX_CAUGHT_MAIL_BYTES). */
  maxBytes?: number;
  warn?: (message: string) => void;
}

/** An SMTP reply error: smtp-server sends `responseCode` and the message to the client. */
function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export function createMailCatcherServer(deps: MailCatcherServerDeps): SMTPServer {
  const maxBytes = deps.maxBytes ?? MAX_CAUGHT_MAIL_BYTES;
  const now = deps.now ?? (() => new Date());
  return new SMTPServer({
    name: "berth-mail-catcher",
    banner: "Berth mail catcher: mail is kept for the environment's owners and delivered to nobody",
    secure: false,
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    // No MAIL FROM before AUTH (530): a message always belongs to one environment.
    authOptional: false,
    // Advertised as SIZE: a client that declares more is refused at MAIL FROM (552).
    size: maxBytes,
    maxClients: 64,
    socketTimeout: 60_000,
    logger: false,
    onAuth(auth: SMTPServerAuthentication, _session: SMTPServerSession, callback) {
      const username = auth.username ?? "";
      checkMailLogin(deps.stateDir, username, auth.password ?? "").then(
        (ok) => (ok ? callback(null, { user: username }) : callback(smtpError(535, "Authentication failed: not an environment's login on this server"))),
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
      );
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      stream.on("data", (chunk: Buffer) => {
        // Past the limit the rest is read and dropped (the client is still sending it).
        bytes += chunk.length;
        if (bytes <= maxBytes) chunks.push(chunk);
      });
      stream.on("error", (error: Error) => callback(error));
      stream.on("end", () => {
        if (stream.sizeExceeded || bytes > maxBytes) {
          callback(smtpError(552, `Message too large: the catcher keeps messages of at most ${maxBytes} bytes`));
          return;
        }
        const environmentId = String(session.user);
        caughtMail(Buffer.concat(chunks), {
          environmentId,
          sender: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
          recipients: session.envelope.rcptTo.map((r) => r.address),
          receivedAt: now(),
        }).then(
          (event) => {
            try {
              deps.emit(event);
            } catch (error) {
              // Not journalled: the client is told to try again later, so the ERP keeps it queued.
              deps.warn?.(`caught mail not journalled: ${String(error)}`);
              callback(smtpError(451, "The catcher could not keep the message; try again later"));
              return;
            }
            callback(null, `Caught as ${event.mail_id}: kept 7 days for environment ${environmentId}, sent to nobody`);
          },
          (error: unknown) => callback(smtpError(554, `The message could not be read: ${error instanceof Error ? error.message : String(error)}`)),
        );
      });
    },
  });
}
