// People's accounts and sign-ins: users with scrypt passwords, opaque session tokens kept
// as SHA-256 only, expiring and revocable one by one (or all at once, by an organisation
// admin: modules/organizations).
import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound, isUniqueViolation } from "../../lib/errors.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";
import type { AccountsRepo, SessionRow, UserRow } from "./accounts.repo.ts";

export const SESSION_PREFIX = "bst_";
/** Sessions last a week from sign-in; signing in again makes a new one. */
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** last_used_at is written at most this often per session, not on every request. */
const TOUCH_EVERY_MS = 60_000;

export interface SessionPrincipal {
  userId: string;
  sessionId: string;
  email: string;
  name: string;
  isPortalAdmin: boolean;
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export function sessionView(s: SessionRow, currentId?: string) {
  return {
    id: s.id,
    created_at: s.createdAt.toISOString(),
    last_used_at: s.lastUsedAt?.toISOString() ?? null,
    expires_at: s.expiresAt.toISOString(),
    user_agent: s.userAgent,
    ip: s.ip,
    current: s.id === currentId,
  };
}

export function userView(u: UserRow) {
  return { id: u.id, email: u.email, name: u.name, is_portal_admin: u.isPortalAdmin, created_at: u.createdAt.toISOString() };
}

export function createSessions(deps: { accounts: AccountsRepo; clock: Clock; ttlMs?: number }) {
  const { accounts, clock } = deps;
  const ttl = deps.ttlMs ?? SESSION_TTL_MS;

  async function createUser(input: { email: string; name: string; password: string; isPortalAdmin?: boolean }) {
    try {
      return await accounts.insertUser({
        email: input.email.trim(),
        name: input.name,
        passwordHash: await hashPassword(input.password),
        isPortalAdmin: input.isPortalAdmin ?? false,
        createdAt: clock.now(),
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError("email_taken", "An account with this e-mail address already exists");
      throw err;
    }
  }

  async function openSession(userId: string, meta: { userAgent?: string | undefined; ip?: string | undefined }) {
    const token = SESSION_PREFIX + randomBytes(32).toString("base64url");
    const now = clock.now();
    const session = await accounts.insertSession({
      userId,
      tokenHash: hashToken(token),
      userAgent: meta.userAgent?.slice(0, 300) ?? null,
      ip: meta.ip ?? null,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: new Date(now.getTime() + ttl),
    });
    return { token, session };
  }

  return {
    createUser,

    /** A new person and their own organisation, which they own; signed in at once. */
    async register(input: { email: string; name: string; password: string; organizationName: string }, meta: { userAgent?: string; ip?: string }) {
      const user = await createUser(input);
      const organization = await accounts.insertOwnedOrganization(user.id, input.organizationName, clock.now());
      return { user, organization, ...(await openSession(user.id, meta)) };
    },

    /** A new person without an organisation (they join one by an invitation); signed in at once. */
    async registerAccount(input: { email: string; name: string; password: string }, meta: { userAgent?: string; ip?: string }) {
      const user = await createUser(input);
      return { user, ...(await openSession(user.id, meta)) };
    },

    async login(email: string, password: string, meta: { userAgent?: string; ip?: string }) {
      const user = await accounts.userByEmail(email.trim());
      const ok = await verifyPassword(password, user?.passwordHash ?? null);
      if (!user || !ok) throw new DomainError("invalid_credentials", "The e-mail address or password is wrong");
      return { user, ...(await openSession(user.id, meta)) };
    },

    async authenticate(token: string): Promise<SessionPrincipal | null> {
      if (!token.startsWith(SESSION_PREFIX)) return null;
      const now = clock.now();
      const found = await accounts.liveSession(hashToken(token), now);
      if (!found) return null;
      if (!found.s.lastUsedAt || now.getTime() - found.s.lastUsedAt.getTime() > TOUCH_EVERY_MS) await accounts.touchSession(found.s.id, now);
      return { userId: found.u.id, sessionId: found.s.id, email: found.u.email, name: found.u.name, isPortalAdmin: found.u.isPortalAdmin };
    },

    /** The person of a live session named by id (a stream ticket's session), else null. */
    async principalOfSession(sessionId: string): Promise<SessionPrincipal | null> {
      const found = await accounts.liveSessionById(sessionId, clock.now());
      if (!found) return null;
      return { userId: found.u.id, sessionId: found.s.id, email: found.u.email, name: found.u.name, isPortalAdmin: found.u.isPortalAdmin };
    },

    list: (userId: string) => accounts.liveSessions(userId, clock.now()),

    /** Ends one of the caller's own sessions (sign out elsewhere); another person's is a 404. */
    async revoke(userId: string, sessionId: string) {
      const row = await accounts.revokeSession(userId, sessionId, clock.now());
      if (!row) throw notFound("Session");
      return row;
    },

    /**
     * Signs a person out everywhere: every live session of theirs is revoked, and the streams
     * opened with them end on every replica. Returns how many there were.
     */
    async revokeAll(userId: string): Promise<number> {
      return (await accounts.revokeAllSessions(userId, clock.now())).length;
    },

    /** The caller's own account. */
    async me(userId: string): Promise<UserRow> {
      const user = await accounts.userById(userId);
      if (!user) throw notFound("User");
      return user;
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
