// The control plane's command-signing keys. The first start creates one; rotation adds a
// new active key and keeps the old one pinned ("accepted") until it is retired, so agents
// that have not learnt the new key yet still verify what was signed before.
import { eq, inArray, sql } from "drizzle-orm";
import {
  exportPrivateKey,
  exportPublicKey,
  generateKeyPair,
  importPrivateKey,
  keyIdFor,
  signCommand,
  type KeyObject,
  type SignedCommand,
  type UnsignedCommand,
  type SigningKey,
} from "@berth/protocol";
import { signingKeys, type Database } from "@berth/db";
import { open, seal } from "../../lib/master-key.ts";

export interface CommandSigner {
  sign(cmd: UnsignedCommand): Promise<SignedCommand>;
  /**
   * Loads the signing key and returns a synchronous signer. Callers that sign inside a
   * database transaction must use this before opening it: loading the key takes another
   * pool client, and N concurrent transactions waiting for one deadlock the pool.
   */
  prepare(): Promise<(cmd: UnsignedCommand) => SignedCommand>;
  /** Keys an agent pins: the active one and any still accepted. */
  pinnedKeys(): Promise<SigningKey[]>;
  activeKeyId(): Promise<string>;
  /** A new key agents will pin, not signing yet. */
  addKey(): Promise<SigningKey>;
  /** Makes a pinned key the signing key; the previous one stays pinned ("accepted"). */
  promote(keyId: string): Promise<void>;
  /** Stops pinning a key that no longer signs. */
  retire(keyId: string): Promise<void>;
}

export function createCommandSigner(deps: { db: Database; masterKey: Buffer }): CommandSigner {
  let cached: { keyId: string; key: KeyObject } | null = null;

  async function insertNew(state: "active" | "accepted" = "active", executor: Pick<Database, "insert"> = deps.db): Promise<SigningKey> {
    const pair = generateKeyPair();
    const publicKey = exportPublicKey(pair.publicKey);
    const keyId = keyIdFor(pair.publicKey);
    await executor.insert(signingKeys).values({
      keyId,
      publicKey,
      privateKeyEnc: seal(deps.masterKey, exportPrivateKey(pair.privateKey)),
      state,
    });
    return { key_id: keyId, public_key: publicKey };
  }

  async function active(): Promise<{ keyId: string; key: KeyObject }> {
    if (cached) return cached;
    let [row] = await deps.db.select().from(signingKeys).where(eq(signingKeys.state, "active"));
    if (!row) {
      // Two replicas starting together may both try; the loser reads the winner's key.
      await deps.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(724311002)`);
        const [again] = await tx.select().from(signingKeys).where(eq(signingKeys.state, "active"));
        // Inside the transaction: taking a second pool client here deadlocks under load.
        if (!again) await insertNew("active", tx);
      });
      [row] = await deps.db.select().from(signingKeys).where(eq(signingKeys.state, "active"));
    }
    cached = { keyId: row!.keyId, key: importPrivateKey(open(deps.masterKey, row!.privateKeyEnc)) };
    return cached;
  }

  return {
    async sign(cmd) {
      const { keyId, key } = await active();
      return signCommand(cmd, key, keyId);
    },
    async prepare() {
      const { keyId, key } = await active();
      return (cmd) => signCommand(cmd, key, keyId);
    },
    async pinnedKeys() {
      await active();
      const rows = await deps.db.select().from(signingKeys).where(inArray(signingKeys.state, ["active", "accepted"]));
      return rows.map((r) => ({ key_id: r.keyId, public_key: r.publicKey }));
    },
    async activeKeyId() {
      return (await active()).keyId;
    },
    async addKey() {
      await active();
      return insertNew("accepted");
    },
    async promote(keyId) {
      await deps.db.transaction(async (tx) => {
        const [row] = await tx.select().from(signingKeys).where(eq(signingKeys.keyId, keyId));
        if (!row || row.state === "retired") throw new Error(`signing key ${keyId} is not pinned`);
        await tx.update(signingKeys).set({ state: "accepted" }).where(eq(signingKeys.state, "active"));
        await tx.update(signingKeys).set({ state: "active" }).where(eq(signingKeys.keyId, keyId));
      });
      cached = null;
    },
    async retire(keyId) {
      if ((await active()).keyId === keyId) throw new Error("the signing key cannot be retired; promote another key first");
      await deps.db.update(signingKeys).set({ state: "retired", retiredAt: new Date() }).where(eq(signingKeys.keyId, keyId));
    },
  };
}
