// keys.update: replaces the pinned command-signing keys. It arrives as a signed command,
// so only a key this agent already trusts can add or retire one (see PROTOCOL.md).
import { importPublicKey, keyIdFor, type KeyObject, type SigningKey } from "@berth/protocol";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";

export interface PinnedKeys {
  /** The map the command runner verifies with; updated in place. */
  trusted: Map<string, KeyObject>;
  /** Persists the new set (identity.json), atomically. */
  save(keys: SigningKey[]): void;
}

export function createKeysUpdateHandler(pinned: PinnedKeys): CommandHandler<"keys.update"> {
  return async (params) => {
    const imported = new Map<string, KeyObject>();
    for (const k of params.signing_keys) {
      const key = importPublicKey(k.public_key);
      if (keyIdFor(key) !== k.key_id) throw new CommandError("invalid_key", `key ${k.key_id} does not match its public key`);
      imported.set(k.key_id, key);
    }
    // Persist first: after a crash the agent starts with the set it was told to pin.
    pinned.save(params.signing_keys);
    pinned.trusted.clear();
    for (const [id, key] of imported) pinned.trusted.set(id, key);
    return { pinned_key_ids: [...imported.keys()] };
  };
}
