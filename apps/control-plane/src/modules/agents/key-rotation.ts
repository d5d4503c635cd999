// Rotating the command-signing key without stranding any agent: (1) add a key and send
// every enrolled agent keys.update pinning old + new; (2) once all have answered, the
// new key signs; (3) retire the old one and send keys.update pinning the new only.
// keys.update is itself signed by a key each agent already trusts. Reads through
// key-rotation.repo.ts.
import type { AgentCommands } from "./agent-commands.ts";
import type { KeyRotationRepo } from "./key-rotation.repo.ts";
import type { CommandSigner } from "./signing-keys.ts";

/** keys.update waits in the outbox for offline agents for up to 30 days. */
const KEYS_UPDATE_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export function createKeyRotation(deps: { repo: KeyRotationRepo; signer: CommandSigner; commands: Pick<AgentCommands, "issue"> }) {
  async function distribute(): Promise<string[]> {
    const keys = await deps.signer.pinnedKeys();
    const enrolled = await deps.repo.enrolledServers();
    const ids: string[] = [];
    for (const s of enrolled) {
      const row = await deps.commands.issue({
        organizationId: s.organizationId,
        serverId: s.id,
        type: "keys.update",
        params: { signing_keys: keys },
        issuedBy: "system:key-rotation",
        ttlMs: KEYS_UPDATE_TTL_MS,
      });
      ids.push(row.commandId);
    }
    return ids;
  }

  return {
    /** Step 1: a new key every agent will pin; it does not sign yet. */
    async begin() {
      const key = await deps.signer.addKey();
      return { key, commandIds: await distribute() };
    },
    /** Agents that have not yet confirmed the latest keys.update (step 2 waits for none). */
    async unconfirmed(commandIds: string[]): Promise<number> {
      if (commandIds.length === 0) return 0;
      return deps.repo.countNotSucceeded(commandIds);
    },
    /** Step 2: the new key signs from now on. */
    promote: (keyId: string) => deps.signer.promote(keyId),
    /** Step 3: stop pinning the old key everywhere. */
    async retire(keyId: string) {
      await deps.signer.retire(keyId);
      return { commandIds: await distribute() };
    },
    distribute,
  };
}
export type KeyRotation = ReturnType<typeof createKeyRotation>;
