// People's accounts and sign-ins: users with scrypt passwords, opaque session tokens kept
// as SHA-256 only, expiring and revocable one by one.
import { createHash, randomBytes } from "node:crypto";
import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { memberships, organizations, sessions, users, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound, isUniqueViolation } from "../../lib/errors.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";

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

export function sessionView(s: typeof sessions.$inferSelect, currentId?: string) {
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

export function userView(u: typeof users.$inferSelect) {
  return { id: u.id, email: u.email, name: u.name, is_portal_admin: u.isPortalAdmin, created_at: u.createdAt.toISOString() };
}

export function createSessions(deps: { db: Database; clock: Clock; ttlMs?: number }) {
  const { db, clock } = deps;
  const ttl = deps.ttlMs ?? SESSION_TTL_MS;
  const lookup = db
    .select({ s: sessions, u: users })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.tokenHash, sql.placeholder("hash")), isNull(sessions.revokedAt), gt(sessions.expiresAt, sql`${sql.placeholder("now")}::timestamptz`)))
    .prepare("sessions_lookup");

  async function createUser(input: { email: string; name: string; password: string; isPortalAdmin?: boolean }) {
    try {
      const [user] = await db
        .insert(users)
        .values({ email: input.email.trim(), name: input.name, passwordHash: await hashPassword(input.password), isPortalAdmin: input.isPortalAdmin ?? false, createdAt: clock.now() })
        .returning();
      return user!;
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError("email_taken", "An account with this e-mail address already exists");
      throw err;
    }
  }

  async function openSession(userId: string, meta: { userAgent?: string | undefined; ip?: string | undefined }) {
    const token = SESSION_PREFIX + randomBytes(32).toString("base64url");
    const now = clock.now();
    const [row] = await db
      .insert(sessions)
      .values({ userId, tokenHash: hashToken(token), userAgent: meta.userAgent?.slice(0, 300) ?? null, ip: meta.ip ?? null, createdAt: now, lastUsedAt: now, expiresAt: new Date(now.getTime() + ttl) })
      .returning();
    return { token, session: row! };
  }

  return {
    createUser,

    /** A new person and their own organisation, which they own; signed in at once. */
    async register(input: { email: string; name: string; password: string; organizationName: string }, meta: { userAgent?: string; ip?: string }) {
      const user = await createUser(input);
      const [org] = await db.insert(organizations).values({ name: input.organizationName, createdAt: clock.now() }).returning();
      await db.insert(memberships).values({ organizationId: org!.id, userId: user.id, role: "owner", createdAt: clock.now() });
      return { user, organization: org!, ...(await openSession(user.id, meta)) };
    },

    async login(email: string, password: string, meta: { userAgent?: string; ip?: string }) {
      const [user] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email.trim()})`);
      const ok = await verifyPassword(password, user?.passwordHash ?? null);
      if (!user || !ok) throw new DomainError("invalid_credentials", "The e-mail address or password is wrong");
      return { user, ...(await openSession(user.id, meta)) };
    },

    async authenticate(token: string): Promise<SessionPrincipal | null> {
      if (!token.startsWith(SESSION_PREFIX)) return null;
      const now = clock.now();
      const [found] = await lookup.execute({ hash: hashToken(token), now: now.toISOString() });
      if (!found) return null;
      if (!found.s.lastUsedAt || now.getTime() - found.s.lastUsedAt.getTime() > TOUCH_EVERY_MS) {
        await db.update(sessions).set({ lastUsedAt: now }).where(eq(sessions.id, found.s.id));
      }
      return { userId: found.u.id, sessionId: found.s.id, email: found.u.email, name: found.u.name, isPortalAdmin: found.u.isPortalAdmin };
    },

    async list(userId: string) {
      return db
        .select()
        .from(sessions)
        .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, clock.now())))
        .orderBy(desc(sessions.createdAt));
    },

    /** Ends one of the caller's own sessions (sign out elsewhere); another person's is a 404. */
    async revoke(userId: string, sessionId: string) {
      const [row] = await db
        .update(sessions)
        .set({ revokedAt: clock.now() })
        .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId), isNull(sessions.revokedAt)))
        .returning();
      if (!row) throw notFound("Session");
      return row;
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
