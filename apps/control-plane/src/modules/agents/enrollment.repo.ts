// Servers and their enrolment tokens as stored: a new server row, its one-time tokens
// (kept as hashes), and the agent's identity and host written when a token is used.
import { and, eq, isNull } from "drizzle-orm";
import { enrollmentTokens, servers, type Database } from "@berth/db";

export type EnrollmentTokenRow = typeof enrollmentTokens.$inferSelect;
export type NewEnrollmentToken = Pick<typeof enrollmentTokens.$inferInsert, "serverId" | "tokenHash" | "createdBy" | "createdAt" | "expiresAt">;
export type NewServer = Pick<typeof servers.$inferInsert, "organizationId" | "name" | "provider" | "region" | "createdAt">;
/** What enrolment writes on the server row: the agent's key and version, the host, enrolled_at and status. */
export type EnrolledAgent = Pick<
  typeof servers.$inferInsert,
  "agentPublicKey" | "agentVersion" | "hostname" | "os" | "arch" | "cpuCores" | "ramMb" | "diskGb" | "dockerVersion" | "enrolledAt" | "status"
>;

export function createEnrollmentRepo(db: Database) {
  return {
    async insertToken(token: NewEnrollmentToken): Promise<void> {
      await db.insert(enrollmentTokens).values(token);
    },

    async insertServer(server: NewServer): Promise<string> {
      const [row] = await db.insert(servers).values(server).returning({ id: servers.id });
      return row!.id;
    },

    /** The id of the organisation's server, unless there is none or it was deleted. */
    async liveServerId(organizationId: string, serverId: string): Promise<string | undefined> {
      const [row] = await db
        .select({ id: servers.id })
        .from(servers)
        .where(and(eq(servers.id, serverId), eq(servers.organizationId, organizationId), isNull(servers.deletedAt)));
      return row?.id;
    },

    /**
     * In one transaction: locks the token with this hash, lets `check` refuse it (by throwing:
     * nothing is written), then marks it used at `usedAt` and writes `agent` on its server.
     * Two agents racing with one token: the second finds it used. Returns the server's id.
     */
    async consumeToken(tokenHash: string, usedAt: Date, check: (token: EnrollmentTokenRow | undefined) => void, agent: EnrolledAgent): Promise<string> {
      return db.transaction(async (tx) => {
        const [token] = await tx.select().from(enrollmentTokens).where(eq(enrollmentTokens.tokenHash, tokenHash)).for("update");
        check(token);
        await tx.update(enrollmentTokens).set({ usedAt }).where(eq(enrollmentTokens.id, token!.id));
        await tx.update(servers).set(agent).where(eq(servers.id, token!.serverId));
        return token!.serverId;
      });
    },
  };
}
export type EnrollmentRepo = ReturnType<typeof createEnrollmentRepo>;
