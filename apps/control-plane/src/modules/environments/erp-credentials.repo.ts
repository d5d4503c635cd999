// SQL of an environment's ERP credentials, kept sealed in its row: the master password
// (admin_passwd) and the administrator's login password with the version its database has.
import { and, eq, isNull } from "drizzle-orm";
import { environments, type Database } from "@berth/db";

export function createErpCredentialsRepo(db: Database) {
  return {
    /** The sealed master password of the environment, null when none was generated yet. */
    async sealed(environmentId: string): Promise<string | null | undefined> {
      const [row] = await db.select({ enc: environments.adminPasswdEnc }).from(environments).where(eq(environments.id, environmentId));
      return row ? row.enc : undefined;
    },

    /** Stores `sealed` only if the environment has none yet; false when another writer was first. */
    async setIfAbsent(environmentId: string, sealed: string, at: Date): Promise<boolean> {
      const rows = await db
        .update(environments)
        .set({ adminPasswdEnc: sealed, adminPasswdSetAt: at })
        .where(and(eq(environments.id, environmentId), isNull(environments.adminPasswdEnc)))
        .returning({ id: environments.id });
      return rows.length > 0;
    },

    /** Replaces the master password (rotation). */
    async replace(environmentId: string, sealed: string, at: Date): Promise<void> {
      await db.update(environments).set({ adminPasswdEnc: sealed, adminPasswdSetAt: at }).where(eq(environments.id, environmentId));
    },

    /** The sealed administrator login password, when it was set and when the database got it; undefined: no such environment. */
    async login(environmentId: string): Promise<{ enc: string | null; setAt: Date | null; appliedAt: Date | null; migrationId: string | null } | undefined> {
      const [row] = await db
        .select({ enc: environments.adminLoginEnc, setAt: environments.adminLoginSetAt, appliedAt: environments.adminLoginAppliedAt, migrationId: environments.migrationId })
        .from(environments)
        .where(eq(environments.id, environmentId));
      return row;
    },

    /** Stores the login password only if the environment has none yet; false when another writer was first. */
    async setLoginIfAbsent(environmentId: string, sealed: string, at: Date): Promise<boolean> {
      const rows = await db
        .update(environments)
        .set({ adminLoginEnc: sealed, adminLoginSetAt: at })
        .where(and(eq(environments.id, environmentId), isNull(environments.adminLoginEnc)))
        .returning({ id: environments.id });
      return rows.length > 0;
    },

    /** Replaces the login password (rotation): the next deploy sets it. */
    async replaceLogin(environmentId: string, sealed: string, at: Date): Promise<void> {
      await db.update(environments).set({ adminLoginEnc: sealed, adminLoginSetAt: at }).where(eq(environments.id, environmentId));
    },
  };
}
export type ErpCredentialsRepo = ReturnType<typeof createErpCredentialsRepo>;
