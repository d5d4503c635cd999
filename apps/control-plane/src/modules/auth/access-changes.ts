// Access taken away, told to every replica so it ends at once everywhere: the repos that
// remove a membership, change a role or revoke a session send a NOTIFY on ACCESS_CHANNEL in
// the same transaction (delivered at commit), the same mechanism the key caches use for
// revoked API keys (berth_api_keys). The event hub (modules/events) listens and ends the
// open streams the change concerns; a reconnecting client is checked afresh.
export const ACCESS_CHANNEL = "berth_access";

export type AccessChange =
  /** A person's membership of an organisation (or a project of it) was removed or its role changed. */
  | { kind: "membership"; organizationId: string; userId: string }
  /** A session was revoked (signed out, or revoked by an organisation admin). */
  | { kind: "session"; sessionId: string };

/** The NOTIFY payload of a change (well under PostgreSQL's 8000-byte limit). */
export function accessChangePayload(change: AccessChange): string {
  return change.kind === "membership" ? `membership:${change.organizationId}:${change.userId}` : `session:${change.sessionId}`;
}

/** A payload back as a change; null for anything else (ignored by listeners). */
export function parseAccessChange(payload: string): AccessChange | null {
  const [kind, a, b, ...rest] = payload.split(":");
  if (kind === "membership" && a && b && rest.length === 0) return { kind, organizationId: a, userId: b };
  if (kind === "session" && a && b === undefined) return { kind, sessionId: a };
  return null;
}
