// The key cache's clock rules, and a lookup that raced a revocation.
import { describe, expect, it } from "vitest";
import { createKeyCache, type CachedKey } from "./key-cache.ts";

const key = (id: string): CachedKey => ({ id, organizationId: "o", projectId: null, access: "read_only", plan: "starter", revoked: false, budgets: [] });

describe("key cache", () => {
  it("is fresh for the TTL, stale (still answered) for one more, then gone", () => {
    const cache = createKeyCache({ ttlMs: 1_000 });
    cache.set("h", key("k1"), 0);
    expect(cache.get("h", 999)).toMatchObject({ key: { id: "k1" }, stale: false });
    expect(cache.get("h", 1_000)).toMatchObject({ key: { id: "k1" }, stale: true });
    expect(cache.get("h", 1_999)).toMatchObject({ stale: true });
    expect(cache.get("h", 2_000)).toBeUndefined();
  });

  it("a refresh makes the entry fresh again", () => {
    const cache = createKeyCache({ ttlMs: 1_000 });
    cache.set("h", key("k1"), 0);
    expect(cache.get("h", 1_500)?.stale).toBe(true);
    cache.set("h", key("k1"), 1_500);
    expect(cache.get("h", 2_400)).toMatchObject({ stale: false });
  });

  it("does not keep what a lookup read before a key was dropped", () => {
    const cache = createKeyCache();
    const readAt = cache.drops();
    // The key is revoked (and dropped) while its lookup is in flight...
    cache.drop("k1");
    // ...so the row the lookup read, from before the revocation, is not remembered.
    cache.set("h", key("k1"), 0, readAt);
    expect(cache.get("h", 0)).toBeUndefined();
    cache.set("h", key("k1"), 0, cache.drops());
    expect(cache.get("h", 0)?.key.id).toBe("k1");
  });
});
