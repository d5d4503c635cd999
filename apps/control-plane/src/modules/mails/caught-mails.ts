// Files the agents' mail.caught events into caught_mails, inside the ingest transaction: a
// mail is stored only for an environment on the sending server (another server's agent cannot
// put mail in its box), once however often it is resent, and each box it lands in is trimmed
// to the retention rule (mail-rules.ts) in the same transaction.
import type { Event, MailCaughtEvent } from "@berth/protocol";
import type { EventApplier } from "../agents/event-ingest.ts";
import { environmentsOnServer, insertCaughtMails, trimCaughtMails } from "./mails.repo.ts";
import { mailExpiry } from "./mail-rules.ts";

const isMailCaught = (e: Event): e is MailCaughtEvent => e.kind === "mail.caught";

/** `now` is the clock the retention is judged by (tests set it). */
export function createCaughtMailsApplier(now: () => Date = () => new Date()): EventApplier {
  return async (client, serverId, fresh) => {
    const mails = fresh.filter(isMailCaught);
    if (mails.length === 0) return 0;
    const owners = await environmentsOnServer(client, serverId, [...new Set(mails.map((m) => m.environment_id))]);
    const mine = mails.flatMap((e) => {
      const organizationId = owners.get(e.environment_id);
      return organizationId === undefined ? [] : [{ organizationId, e }];
    });
    await insertCaughtMails(client, mine);
    if (owners.size > 0) await trimCaughtMails(client, [...owners.keys()], mailExpiry(now()));
    return mails.length - mine.length;
  };
}
