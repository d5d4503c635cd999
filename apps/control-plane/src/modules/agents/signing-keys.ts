// The control plane's command-signing keys. The first start creates one; rotation adds a
// new active key and keeps the old one pinned ("accepted") until it is retired, so agents
// that have not learnt the new key yet still verify what was signed before. Stored by
// signing-keys.repo.ts.
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
import { sign as ed25519Sign } from "node:crypto";
import { open, seal } from "../../lib/master-key.ts";
import type { NewSigningKey, SigningKeysRepo } from "./signing-keys.repo.ts";

export interface CommandSigner {
  sign(cmd: UnsignedCommand): Promise<SignedCommand>;
  /**
   * Loads the signing key and returns a synchronous signer. Callers that sign inside a
   * database transaction must use this before opening it: loading the key takes another
   * pool client, and N concurrent transactions waiting for one deadlock the pool.
   */
  prepare(): Promise<(cmd: UnsignedCommand) => SignedCommand>;
  /**
   * Signs a release manifest (installers/README.md, "Signed releases") with the signing key:
   * the key agents pin at enrolment and operators pass to install.sh as --key.
   */
  signRelease(text: string): Promise<{ key_id: string; public_key: string; signature: string }>;
  /** The public half of the key signRelease uses (base64, raw 32 bytes): what install.sh --key takes. */
  releaseKey(): Promise<string>;
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

export function createCommandSigner(deps: { repo: SigningKeysRepo; masterKey: Buffer }): CommandSigner {
  const { repo } = deps;
  let cached: { keyId: string; key: KeyObject } | null = null;

  function newKey(state: "active" | "accepted"): NewSigningKey {
    const pair = generateKeyPair();
    return {
      keyId: keyIdFor(pair.publicKey),
      publicKey: exportPublicKey(pair.publicKey),
      privateKeyEnc: seal(deps.masterKey, exportPrivateKey(pair.privateKey)),
      state,
    };
  }

  async function active(): Promise<{ keyId: string; key: KeyObject }> {
    if (cached) return cached;
    let row = await repo.activeKey();
    if (!row) {
      // Two replicas starting together may both try; the loser reads the winner's key.
      await repo.insertUnlessActive(newKey("active"));
      row = await repo.activeKey();
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
    async signRelease(text) {
      const { keyId, key } = await active();
      return { key_id: keyId, public_key: exportPublicKey(key), signature: ed25519Sign(null, Buffer.from(text, "utf8"), key).toString("base64") };
    },
    async releaseKey() {
      return exportPublicKey((await active()).key);
    },
    async pinnedKeys() {
      await active();
      const rows = await repo.pinned();
      return rows.map((r) => ({ key_id: r.keyId, public_key: r.publicKey }));
    },
    async activeKeyId() {
      return (await active()).keyId;
    },
    async addKey() {
      await active();
      const key = newKey("accepted");
      await repo.insert(key);
      return { key_id: key.keyId, public_key: key.publicKey };
    },
    async promote(keyId) {
      if (!(await repo.promote(keyId))) throw new Error(`signing key ${keyId} is not pinned`);
      cached = null;
    },
    async retire(keyId) {
      if ((await active()).keyId === keyId) throw new Error("the signing key cannot be retired; promote another key first");
      await repo.retire(keyId, new Date());
    },
  };
}
