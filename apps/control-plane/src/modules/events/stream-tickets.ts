// Stream tickets: what an EventSource (which cannot send headers) puts in the URL of
// GET /api/v1/events instead of the session token. A ticket is short-lived (60 s), names one
// session and one organisation, opens one stream, and is good for nothing else, so a URL
// that ends up in a log, a proxy or the browser history gives nothing worth stealing.
//
// A ticket is signed with an instance secret (HMAC-SHA256) rather than stored: issuing one is
// no write, and every replica can check it. That it is used once is kept in the shared
// rate_limit_counters (one atomic upsert with a limit of 1, keyed by the ticket's nonce, in
// the window of its expiry), which every replica sees and the housekeeping prunes.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";
import type { SessionPrincipal } from "../auth/sessions.ts";

export const TICKET_PREFIX = "bet_";
export const TICKET_TTL_MS = 60_000;

interface TicketClaims {
  /** Session id. */
  s: string;
  /** Organisation id. */
  o: string;
  /** Expiry, epoch seconds. */
  e: number;
  /** Nonce: what makes it single-use. */
  n: string;
}

const refused = (why: string) => new DomainError("invalid_stream_ticket", `This stream ticket ${why}; ask for a new one: POST /api/v1/events/tickets`);

export function createStreamTickets(deps: {
  secret: string;
  clock: Clock;
  sessions: { principalOfSession(sessionId: string): Promise<SessionPrincipal | null> };
  /** The shared counter: adds n unless that passes the limit, else null (rate-limits.repo.ts). */
  counters: { lease(bucket: string, windowStart: number, n: number, limit: number): Promise<number | null> };
}) {
  const sign = (body: string) => createHmac("sha256", deps.secret).update(`stream-ticket:${body}`).digest();

  return {
    /** A ticket for one stream of the organisation (the caller's access to it is checked by the route). */
    issue(person: SessionPrincipal, organizationId: string): { ticket: string; expiresAt: Date } {
      const expiresAt = new Date(deps.clock.now().getTime() + TICKET_TTL_MS);
      const claims: TicketClaims = { s: person.sessionId, o: organizationId, e: Math.ceil(expiresAt.getTime() / 1000), n: randomBytes(16).toString("base64url") };
      const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
      return { ticket: `${TICKET_PREFIX}${body}.${sign(body).toString("base64url")}`, expiresAt };
    },

    /** Spends the ticket on a stream of organizationId: the person it was issued to, or invalid_stream_ticket. */
    async redeem(ticket: string, organizationId: string): Promise<SessionPrincipal> {
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
      const person = await deps.sessions.principalOfSession(claims.s);
      if (!person) throw new DomainError("invalid_session", "The session this ticket was issued to is expired or signed out; sign in again");
      return person;
    },
  };
}
export type StreamTickets = ReturnType<typeof createStreamTickets>;
