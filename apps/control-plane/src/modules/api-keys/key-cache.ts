// Authenticated API keys, remembered per replica for a short while so the hot path needs no
// lookup. A revoked key is dropped at once on the replica that revoked it and, through
// NOTIFY on KEYS_CHANNEL, on every other replica; the TTL bounds anything missed (a plan
// change, a notification lost while the listen connection was down).
import type { KeyAccess } from "./api-key-format.ts";
import type { Budget } from "../rate-limits/rate-limiter.ts";

export const KEYS_CHANNEL = "berth_api_keys";

export interface CachedKey {
  id: string;
  organizationId: string;
  projectId: string | null;
  access: KeyAccess;
  plan: string;
  revoked: boolean;
  /** The budget every request with this key takes (built once, not per request). */
  budgets: readonly Budget[];
}

export interface KeyCache {
  get(hash: string, nowMs: number): CachedKey | undefined;
  set(hash: string, key: CachedKey, nowMs: number): void;
  /** Forgets a key (revoked, changed). */
  drop(keyId: string): void;
  clear(): void;
}

export function createKeyCache(opts: { ttlMs?: number; max?: number } = {}): KeyCache {
  const ttl = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 50_000;
  const byHash = new Map<string, { key: CachedKey; expires: number }>();
  const hashById = new Map<string, string>();
  return {
    get(hash, nowMs) {
      const hit = byHash.get(hash);
      if (!hit) return undefined;
      if (hit.expires <= nowMs) {
        byHash.delete(hash);
        hashById.delete(hit.key.id);
        return undefined;
      }
      return hit.key;
    },
    set(hash, key, nowMs) {
      if (byHash.size >= max) {
        // Maps iterate in insertion order: the oldest entry goes first.
        const oldest = byHash.keys().next().value;
        if (oldest !== undefined) {
          hashById.delete(byHash.get(oldest)!.key.id);
          byHash.delete(oldest);
        }
      }
      byHash.set(hash, { key, expires: nowMs + ttl });
      hashById.set(key.id, hash);
    },
    drop(keyId) {
      const hash = hashById.get(keyId);
      if (hash === undefined) return;
      hashById.delete(keyId);
      byHash.delete(hash);
    },
    clear() {
      byHash.clear();
      hashById.clear();
    },
  };
}
