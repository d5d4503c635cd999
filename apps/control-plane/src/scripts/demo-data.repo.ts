// What the demo organisation needs written directly: the organisation, a server as if it
// had enrolled, and environment states as if they had been deployed.
import { eq } from "drizzle-orm";
import { environments, organizations, servers, type Database } from "@berth/db";

export function createDemoDataRepo(db: Database) {
  return {
    async insertOrganization(values: typeof organizations.$inferInsert) {
      const [org] = await db.insert(organizations).values(values).returning();
      return org!;
    },
    async insertServer(values: typeof servers.$inferInsert) {
      const [server] = await db.insert(servers).values(values).returning();
      return server!;
    },
    async setEnvironmentStatus(id: string, status: string): Promise<void> {
      await db.update(environments).set({ status }).where(eq(environments.id, id));
    },
  };
}
