// What key rotation reads: the servers to send keys.update to, and how many of the
// keys.update commands sent are not confirmed yet.
import { and, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import { agentCommands, servers, type Database } from "@berth/db";

export function createKeyRotationRepo(db: Database) {
  return {
    /** Every enrolled server that is not deleted. */
    enrolledServers: (): Promise<{ id: string; organizationId: string }[]> =>
      db
        .select({ id: servers.id, organizationId: servers.organizationId })
        .from(servers)
        .where(and(isNotNull(servers.enrolledAt), isNull(servers.deletedAt))),

    /** How many of these commands have not succeeded. */
    async countNotSucceeded(commandIds: string[]): Promise<number> {
      const [row] = await db
        .select({ n: sql<number>`count(*)::int` })
        .from(agentCommands)
        .where(and(inArray(agentCommands.commandId, commandIds), sql`${agentCommands.state} <> 'succeeded'`));
      return row?.n ?? 0;
    },
  };
}
export type KeyRotationRepo = ReturnType<typeof createKeyRotationRepo>;
