// People's accounts and sessions as stored: users, their session rows (token hashes only)
// and, at registration, their own organisation.
import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { memberships, organizations, sessions, users, type Database } from "@berth/db";
import { ACCESS_CHANNEL, accessChangePayload } from "./access-changes.ts";

export type UserRow = typeof users.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;

export function createAccountsRepo(db: Database) {
  const lookup = db
    .select({ s: sessions, u: users })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.tokenHash, sql.placeholder("hash")), isNull(sessions.revokedAt), gt(sessions.expiresAt, sql`${sql.placeholder("now")}::timestamptz`)))
    .prepare("sessions_lookup");

  return {
    async insertUser(values: typeof users.$inferInsert): Promise<UserRow> {
      const [user] = await db.insert(users).values(values).returning();
      return user!;
    },

    async userByEmail(email: string): Promise<UserRow | undefined> {
      const [user] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`);
      return user;
    },

    async userById(id: string): Promise<UserRow | undefined> {
      const [user] = await db.select().from(users).where(eq(users.id, id));
      return user;
    },

    /** A new organisation owned by the user. */
    async insertOwnedOrganization(userId: string, name: string, now: Date) {
      const [org] = await db.insert(organizations).values({ name, createdAt: now }).returning();
      await db.insert(memberships).values({ organizationId: org!.id, userId, role: "owner", createdAt: now });
      return org!;
    },

    /** Makes the account a portal administrator (the bootstrap command). */
    async makePortalAdmin(userId: string): Promise<void> {
      await db.update(users).set({ isPortalAdmin: true }).where(eq(users.id, userId));
    },

    async insertSession(values: typeof sessions.$inferInsert): Promise<SessionRow> {
      const [row] = await db.insert(sessions).values(values).returning();
      return row!;
    },

    /** The live session with this token hash, and its user. */
    async liveSession(tokenHash: string, now: Date) {
      const [found] = await lookup.execute({ hash: tokenHash, now: now.toISOString() });
      return found;
    },

    /** The live session with this id, and its user (stream tickets name the session by id). */
    async liveSessionById(id: string, now: Date) {
      const [found] = await db
        .select({ s: sessions, u: users })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(and(eq(sessions.id, id), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)));
      return found;
    },

    async touchSession(id: string, now: Date): Promise<void> {
      await db.update(sessions).set({ lastUsedAt: now }).where(eq(sessions.id, id));
    },

    async liveSessions(userId: string, now: Date): Promise<SessionRow[]> {
      return db
        .select()
        .from(sessions)
        .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)))
        .orderBy(desc(sessions.createdAt));
    },

    /**
     * Revokes one of the user's own live sessions; undefined when there is none. Every
     * replica hears of it (ACCESS_CHANNEL, at commit) and ends the streams opened with it.
     */
    async revokeSession(userId: string, sessionId: string, now: Date): Promise<SessionRow | undefined> {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(sessions)
          .set({ revokedAt: now })
          .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId), isNull(sessions.revokedAt)))
          .returning();
        if (row) await tx.execute(sql`select pg_notify(${ACCESS_CHANNEL}, ${accessChangePayload({ kind: "session", sessionId: row.id })})`);
        return row;
      });
    },

    /** Revokes every live session of the user, each announced like revokeSession; their ids. */
    async revokeAllSessions(userId: string, now: Date): Promise<string[]> {
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(sessions)
          .set({ revokedAt: now })
          .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
          .returning({ id: sessions.id });
        const payloads = rows.map((r) => accessChangePayload({ kind: "session", sessionId: r.id }));
        if (payloads.length > 0) await tx.execute(sql`select pg_notify(${ACCESS_CHANNEL}, p) from unnest(${sql.param(payloads)}::text[]) as p`);
        return rows.map((r) => r.id);
      });
    },
  };
}
export type AccountsRepo = ReturnType<typeof createAccountsRepo>;
