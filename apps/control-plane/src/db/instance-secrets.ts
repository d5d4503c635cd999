// Secrets every replica must share (e.g. the cursor key) live in PostgreSQL: the first
// replica to start creates them, the others read the same value.
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { instanceSettings, type Database } from "@berth/db";

export async function instanceSecret(db: Database, key: string): Promise<string> {
  await db
    .insert(instanceSettings)
    .values({ key, value: randomBytes(32).toString("base64url") })
    .onConflictDoNothing();
  const [row] = await db.select().from(instanceSettings).where(eq(instanceSettings.key, key));
  if (!row || typeof row.value !== "string") throw new Error(`instance secret ${key} is missing`);
  return row.value;
}
