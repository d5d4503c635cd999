// Stream tickets: what an EventSource (which cannot send headers) puts in the URL of
// GET /api/v1/events instead of the session token. A ticket is short-lived (60 s), names one
// session and one organisation, opens one stream, and is good for nothing else, so a URL
// that ends up in a log, a proxy or the browser history gives nothing worth stealing.
//
// A ticket is signed with an instance secret (HMAC-SHA256) rather than stored: issuing one is
// no write, and every replica can check it. That it is used once is kept in the shared
// rate_limit_counters (one atomic upsert with a limit of 1, keyed by the ticket's nonce, in
// the window of its expiry), which every replica sees and the housekeeping prunes.
//
// An API key gets tickets too (POST /api/public/v1/events/tickets): the ticket names the key
// instead of a session, and the stream it opens shows what that key may see (its organisation,
// or only its project for a project-scoped key). The key is checked again when it is redeemed.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";
import type { SessionPrincipal } from "../auth/sessions.ts";

export const TICKET_PREFIX = "bet_";
export const TICKET_TTL_MS = 60_000;

interface TicketClaims {
  /** Session id (a person's ticket). */
  s?: string;
  /** API key id (a key's ticket). */
  k?: string;
  /** Organisation id. */
  o: string;
  /** Expiry, epoch seconds. */
  e: number;
  /** Nonce: what makes it single-use. */
  n: string;
}

const refused = (why: string) => new DomainError("invalid_stream_ticket", `This stream ticket ${why}; ask for a new one: POST /api/v1/events/tickets`);

/** Whom a redeemed ticket opens the stream for. */
export type StreamViewer =
  | { kind: "session"; person: SessionPrincipal }
  | { kind: "api_key"; keyId: string; organizationId: string; projectId: string | null };

export function createStreamTickets(deps: {
  secret: string;
  clock: Clock;
  sessions: { principalOfSession(sessionId: string): Promise<SessionPrincipal | null> };
  keys: { byIdForTicket(id: string): Promise<{ organization_id: string; project_id: string | null; revoked: boolean; plan: string } | undefined> };
  /** The shared counter: adds n unless that passes the limit, else null (rate-limits.repo.ts). */
  counters: { lease(bucket: string, windowStart: number, n: number, limit: number): Promise<number | null> };
}) {
  const sign = (body: string) => createHmac("sha256", deps.secret).update(`stream-ticket:${body}`).digest();

  function mint(who: { s: string } | { k: string }, organizationId: string): { ticket: string; expiresAt: Date } {
    const expiresAt = new Date(deps.clock.now().getTime() + TICKET_TTL_MS);
    const claims: TicketClaims = { ...who, o: organizationId, e: Math.ceil(expiresAt.getTime() / 1000), n: randomBytes(16).toString("base64url") };
    const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
    return { ticket: `${TICKET_PREFIX}${body}.${sign(body).toString("base64url")}`, expiresAt };
  }

  return {
    /** A ticket for one stream of the organisation (the caller's access to it is checked by the route). */
    issue(person: SessionPrincipal, organizationId: string): { ticket: string; expiresAt: Date } {
      return mint({ s: person.sessionId }, organizationId);
    },

    /** A ticket for one stream of the key's organisation, showing what the key may see. */
    issueForKey(key: { keyId: string; organizationId: string }): { ticket: string; expiresAt: Date } {
      return mint({ k: key.keyId }, key.organizationId);
    },

    /** Spends the ticket on a stream of organizationId: whom it was issued to, or invalid_stream_ticket. */
    async redeem(ticket: string, organizationId: string): Promise<StreamViewer> {
      const m = /^bet_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(ticket);
      if (!m) throw refused("is malformed");
      const given = Buffer.from(m[2]!, "base64url");
      const expected = sign(m[1]!);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused("is not valid");
      let claims: TicketClaims;
      try {
        claims = JSON.parse(Buffer.from(m[1]!, "base64url").toString("utf8")) as TicketClaims;
      } catch {
        throw refused("is malformed");
      }
      if (claims.e * 1000 <= deps.clock.now().getTime()) throw refused("has expired");
      if (claims.o !== organizationId) throw refused("is for another organisation");
      if ((await deps.counters.lease(`stream-ticket:${claims.n}`, claims.e, 1, 1)) === null) throw refused("was already used");
      if (typeof claims.k === "string") {
        const key = await deps.keys.byIdForTicket(claims.k);
        if (!key || key.organization_id !== organizationId) throw refused("is not valid");
        if (key.revoked) throw new DomainError("api_key_revoked", "The API key this ticket was issued to has been revoked");
        if (key.plan === "free") throw new DomainError("plan_upgrade_required", "API access requires the Starter plan or higher");
        return { kind: "api_key", keyId: claims.k, organizationId, projectId: key.project_id };
      }
      if (typeof claims.s !== "string") throw refused("is malformed");
      const person = await deps.sessions.principalOfSession(claims.s);
      if (!person) throw new DomainError("invalid_session", "The session this ticket was issued to is expired or signed out; sign in again");
      return { kind: "session", person };
    },
  };
}
export type StreamTickets = ReturnType<typeof createStreamTickets>;
