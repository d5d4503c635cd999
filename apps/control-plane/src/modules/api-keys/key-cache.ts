// Authenticated API keys, remembered per replica for a short while so the hot path needs no
// lookup. A revoked key is dropped at once on the replica that revoked it and, through
// NOTIFY on KEYS_CHANNEL, on every other replica; the TTL bounds anything missed (a plan
// change, a notification lost while the listen connection was down).
//
// An entry past its TTL is not thrown away at once: the request that finds it is answered
// from it and has it refreshed (public-api/api-key-auth.ts), so no request of a busy key waits
// for the database once a minute, and keys first seen together (a replica's start) do not all
// look themselves up again in the same moment. Past a second TTL the entry is gone: a
// refresh that keeps failing (the database down) cannot stretch a key's life further.
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

export interface CacheHit {
  key: CachedKey;
  /** Past the TTL: still answered from, and to be refreshed. */
  stale: boolean;
}

export interface KeyCache {
  get(hash: string, nowMs: number): CacheHit | undefined;
  /** Counts drops: a lookup that began before one may have read what was dropped. */
  drops(): number;
  /** Remembers a key read when drops() was `readAt`; not if a key was dropped since. */
  set(hash: string, key: CachedKey, nowMs: number, readAt?: number): void;
  /** Forgets a key (revoked, changed). */
  drop(keyId: string): void;
  /** Forgets what is remembered under a hash (the key is gone). */
  dropHash(hash: string): void;
  clear(): void;
}

export function createKeyCache(opts: { ttlMs?: number; max?: number } = {}): KeyCache {
  const ttl = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 50_000;
  const byHash = new Map<string, { hit: CacheHit; staleAt: number; expires: number }>();
  const hashById = new Map<string, string>();
  let drops = 0;
  /** Forgets the entry under a hash, and its key's way back to it. */
  const forget = (hash: string) => {
    const entry = byHash.get(hash);
    if (!entry) return;
    byHash.delete(hash);
    hashById.delete(entry.hit.key.id);
  };
  return {
    drops: () => drops,
    get(hash, nowMs) {
      const entry = byHash.get(hash);
      if (!entry) return undefined;
      if (entry.staleAt > nowMs) return entry.hit;
      if (entry.expires <= nowMs) {
        forget(hash);
        return undefined;
      }
      entry.hit.stale = true;
      return entry.hit;
    },
    set(hash, key, nowMs, readAt = drops) {
      if (readAt !== drops) return;
      if (byHash.size >= max && !byHash.has(hash)) {
        // Maps iterate in insertion order: the oldest entry goes first.
        const oldest = byHash.keys().next().value;
        if (oldest !== undefined) forget(oldest);
      }
      byHash.set(hash, { hit: { key, stale: false }, staleAt: nowMs + ttl, expires: nowMs + 2 * ttl });
      hashById.set(key.id, hash);
    },
    drop(keyId) {
      drops++;
      const hash = hashById.get(keyId);
      if (hash !== undefined) forget(hash);
    },
    dropHash: forget,
    clear() {
      drops++;
      byHash.clear();
      hashById.clear();
    },
  };
}
