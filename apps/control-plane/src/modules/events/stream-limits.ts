// Caps on open event streams, per organisation and per person, counted on this replica: a
// stream holds a socket and a subscriber for as long as it is open, so one organisation (or
// one person with a loop of tabs) must not be able to hold them all. Behind a load balancer
// each replica applies the caps to the streams it serves.
import { DomainError } from "../../lib/errors.ts";

export interface StreamCaps {
  perOrganization: number;
  perPerson: number;
}

export const DEFAULT_STREAM_CAPS: StreamCaps = { perOrganization: 50, perPerson: 10 };
/** What a refused client is told to wait: streams end when their tabs close. */
const RETRY_AFTER_S = 30;

export function createStreamLimits(caps: StreamCaps = DEFAULT_STREAM_CAPS) {
  const byOrg = new Map<string, number>();
  const byPerson = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string, d: number) => {
    const n = (m.get(k) ?? 0) + d;
    if (n <= 0) m.delete(k);
    else m.set(k, n);
  };
  return {
    /** Takes a slot for one stream, or throws too_many_streams; the returned release is idempotent. */
    acquire(organizationId: string, userId: string): () => void {
      const refuse = (what: string, n: number) =>
        new DomainError("too_many_streams", `At most ${n} live event streams may be open ${what}; close one or retry in ${RETRY_AFTER_S} s`, undefined, { "retry-after": String(RETRY_AFTER_S) });
      if ((byOrg.get(organizationId) ?? 0) >= caps.perOrganization) throw refuse("per organisation", caps.perOrganization);
      if ((byPerson.get(userId) ?? 0) >= caps.perPerson) throw refuse("per person", caps.perPerson);
      bump(byOrg, organizationId, 1);
      bump(byPerson, userId, 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        bump(byOrg, organizationId, -1);
        bump(byPerson, userId, -1);
      };
    },
  };
}
export type StreamLimits = ReturnType<typeof createStreamLimits>;
