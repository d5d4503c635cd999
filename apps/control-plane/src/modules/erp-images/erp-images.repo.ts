// The image settings, kept as one instance setting.
import { eq } from "drizzle-orm";
import { instanceSettings, type Database } from "@berth/db";

const KEY = "images";

export function createErpImagesRepo(db: Database) {
  return {
    async load(): Promise<unknown> {
      const [row] = await db.select().from(instanceSettings).where(eq(instanceSettings.key, KEY));
      return row?.value;
    },
    async save(value: unknown): Promise<void> {
      await db.insert(instanceSettings).values({ key: KEY, value }).onConflictDoUpdate({ target: instanceSettings.key, set: { value } });
    },
  };
}
export type ErpImagesRepo = ReturnType<typeof createErpImagesRepo>;
