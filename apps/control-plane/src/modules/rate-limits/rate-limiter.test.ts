// The rules of a rate-limit decision, on an in-memory meter: which budget refuses, what the
// answer's headers show, the refusal's wording and Retry-After.
import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import type { LeaseMeter } from "./lease-meter.ts";
import { createRateLimiter, withRateContext, type RateContext } from "./rate-limiter.ts";

function memoryMeter(): LeaseMeter {
  const counts = new Map<string, number>();
  return {
    async hit(bucket, windowStart, limit, resetAt) {
      const id = `${bucket}@${windowStart}`;
      const used = Math.min((counts.get(id) ?? 0) + 1, limit + 1);
      counts.set(id, used);
      return { limit, used, resetAt };
    },
  };
}

const clockAt = (ms: number) => ({ now: () => new Date(ms) });
const noRepo = { pruneBefore: async () => {} };

/** Runs take() inside a request's rate context, as the hook does; returns the headers the answer would carry. */
async function take(limiter: ReturnType<typeof createRateLimiter>, ...budgets: Parameters<ReturnType<typeof createRateLimiter>["take"]>) {
  const context: RateContext = { headers: null };
  let error: unknown;
  await new Promise<void>((resolve) =>
    withRateContext(context, () => {
      limiter.take(...budgets).then(resolve, (err) => {
        error = err;
        resolve();
      });
    }),
  );
  return { headers: context.headers, error: error as DomainError | undefined };
}

describe("rate limiter", () => {
  it("admits exactly the limit in a window, then refuses with Retry-After until the window ends", async () => {
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: noRepo, clock: clockAt(60_000 * 1000 + 15_000) });
    for (let i = 1; i <= 3; i++) {
      const { headers, error } = await take(limiter, { bucket: "b", limit: 3 });
      expect(error).toBeUndefined();
      expect(headers).toEqual({ "x-ratelimit-limit": "3", "x-ratelimit-remaining": String(3 - i), "x-ratelimit-window": "60" });
    }
    const { headers, error } = await take(limiter, { bucket: "b", limit: 3 });
    expect(error).toBeInstanceOf(DomainError);
    expect(error!.code).toBe("rate_limit_exceeded");
    expect(error!.headers).toEqual({ "retry-after": "45" });
    expect(error!.message).toBe("Rate limit of 3 requests per 60 seconds exceeded; retry in 45 s");
    expect(headers!["x-ratelimit-remaining"]).toBe("0");
  });

  it("names what is limited when the budget says so", async () => {
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: noRepo, clock: clockAt(59_000) });
    await take(limiter, { bucket: "login", limit: 1, what: "sign-in attempts" });
    const { error } = await take(limiter, { bucket: "login", limit: 1, what: "sign-in attempts" });
    expect(error!.message).toBe("At most 1 sign-in attempts per 60 seconds; retry in 1 s");
  });

  it("shows the budget with the least room left, and the refusing one when one refuses", async () => {
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: noRepo, clock: clockAt(0) });
    const key = { bucket: "key", limit: 20 };
    const webhook = { bucket: "webhook", limit: 2 };
    expect((await take(limiter, key, webhook)).headers!["x-ratelimit-limit"]).toBe("2");
    expect((await take(limiter, key)).headers).toMatchObject({ "x-ratelimit-limit": "20", "x-ratelimit-remaining": "18" });
    await take(limiter, key, webhook);
    const refused = await take(limiter, key, webhook);
    expect(refused.error!.code).toBe("rate_limit_exceeded");
    expect(refused.headers).toMatchObject({ "x-ratelimit-limit": "2", "x-ratelimit-remaining": "0" });
  });

  it("counts every budget of a request, also the ones after a refusing one", async () => {
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: noRepo, clock: clockAt(0) });
    await take(limiter, { bucket: "a", limit: 1 });
    await take(limiter, { bucket: "a", limit: 1 }, { bucket: "b", limit: 5 });
    expect((await take(limiter, { bucket: "b", limit: 5 })).headers!["x-ratelimit-remaining"]).toBe("3");
  });

  it("a new window starts from nothing", async () => {
    let now = 10_000;
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: noRepo, clock: { now: () => new Date(now) } });
    await take(limiter, { bucket: "w", limit: 1 });
    expect((await take(limiter, { bucket: "w", limit: 1 })).error).toBeDefined();
    now += 60_000;
    expect((await take(limiter, { bucket: "w", limit: 1 })).error).toBeUndefined();
  });

  it("forgets windows that ended over a minute ago", async () => {
    const pruned: number[] = [];
    const limiter = createRateLimiter({ meter: memoryMeter(), repo: { pruneBefore: async (w) => void pruned.push(w) }, clock: clockAt(1_000_000_000) });
    await limiter.forgetOldWindows();
    expect(pruned).toEqual([1_000_000 - 120]);
  });
});
