// The command-signing keys as stored (signing_keys): the private halves sealed with the
// master key, each key active (signs), accepted (pinned, does not sign) or retired.
import { eq, inArray, sql } from "drizzle-orm";
import { signingKeys, type Database } from "@berth/db";

export type SigningKeyRow = typeof signingKeys.$inferSelect;
export type NewSigningKey = Pick<typeof signingKeys.$inferInsert, "keyId" | "publicKey" | "privateKeyEnc" | "state">;

export function createSigningKeysRepo(db: Database) {
  const activeKey = async (): Promise<SigningKeyRow | undefined> => (await db.select().from(signingKeys).where(eq(signingKeys.state, "active")))[0];

  return {
    activeKey,

    /**
     * Writes `key` unless an active key exists, under an advisory lock: of replicas starting
     * together, one writes and the others find its key. One client throughout (taking a
     * second pool client inside the transaction deadlocks under load).
     */
    async insertUnlessActive(key: NewSigningKey): Promise<void> {
      await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(724311002)`);
        const [again] = await tx.select().from(signingKeys).where(eq(signingKeys.state, "active"));
        if (!again) await tx.insert(signingKeys).values(key);
      });
    },

    async insert(key: NewSigningKey): Promise<void> {
      await db.insert(signingKeys).values(key);
    },

    /** The active key and those still accepted. */
    pinned: (): Promise<SigningKeyRow[]> => db.select().from(signingKeys).where(inArray(signingKeys.state, ["active", "accepted"])),

    /**
     * Makes a pinned key the active one and the active one accepted, in one transaction;
     * false (nothing written) when the key is unknown or retired.
     */
    async promote(keyId: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const [row] = await tx.select().from(signingKeys).where(eq(signingKeys.keyId, keyId));
        if (!row || row.state === "retired") return false;
        await tx.update(signingKeys).set({ state: "accepted" }).where(eq(signingKeys.state, "active"));
        await tx.update(signingKeys).set({ state: "active" }).where(eq(signingKeys.keyId, keyId));
        return true;
      });
    },

    async retire(keyId: string, at: Date): Promise<void> {
      await db.update(signingKeys).set({ state: "retired", retiredAt: at }).where(eq(signingKeys.keyId, keyId));
    },
  };
}
export type SigningKeysRepo = ReturnType<typeof createSigningKeysRepo>;
