// One rate-limit mechanism for both APIs: public spec section 8 (per key) and the platform
// spec's limits (sign-in, deployments, retries, git hooks). A budget is a fixed 60-second
// window counted in PostgreSQL through leases (lease-meter.ts), exact across replicas.
// Whoever decides that a request costs budget (the API-key hook, a route, a service) calls
// take(); the answer then carries the X-RateLimit-* headers of those budgets (set on the reply
// the request's context holds, rate-limit-hook.ts, so services never see one), and a spent budget throws
// 429 rate_limit_exceeded with Retry-After.
import { AsyncLocalStorage } from "node:async_hooks";
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";
import type { LeaseMeter, Meter } from "./lease-meter.ts";
import type { RateLimitsRepo } from "./rate-limits.repo.ts";

export const RATE_WINDOW_SECONDS = 60;

export interface Budget {
  bucket: string;
  limit: number;
  /** What the refusal says is limited ("sign-in attempts for this account"); without it the budget counts requests. */
  what?: string;
}

/** What the current request's answer says about its budgets. */
export interface RateContext {
  headers: Record<string, string> | null;
  /** The request's reply, given the headers as soon as they are known (later takes overwrite them). */
  reply?: { headers(values: Record<string, string>): unknown } | null;
}

const requestContext = new AsyncLocalStorage<RateContext>();

/** Runs fn (the rest of a request) with its own rate context; the hook reads the context back. */
export function withRateContext(context: RateContext, fn: () => void): void {
  requestContext.run(context, fn);
}

export interface RateLimiter {
  /**
   * Counts one unit against every budget. The answer shows the budget that refused, else the
   * one with the least room left; throws rate_limit_exceeded when any budget is spent.
   */
  take(...budgets: Budget[]): Promise<void>;
  /**
   * take() without a promise when no budget needs a lease (the common case): undefined once
   * decided (throws rate_limit_exceeded synchronously), else the promise of the rest.
   */
  takeNow(budgets: readonly Budget[]): Promise<void> | undefined;
  /** Drops the counters of windows that ended over a minute ago (housekeeping). */
  forgetOldWindows(): Promise<void>;
}

export function createRateLimiter(deps: { meter: LeaseMeter; repo: Pick<RateLimitsRepo, "pruneBefore">; clock: Clock }): RateLimiter {
  const limiter: RateLimiter = {
    forgetOldWindows: () => deps.repo.pruneBefore(Math.floor(deps.clock.now().getTime() / 1000) - 2 * RATE_WINDOW_SECONDS),
    async take(...budgets) {
      await limiter.takeNow(budgets);
    },
    takeNow(budgets) {
      const windowStart = Math.floor(deps.clock.now().getTime() / 1000 / RATE_WINDOW_SECONDS) * RATE_WINDOW_SECONDS;
      const resetAt = windowStart + RATE_WINDOW_SECONDS;
      const meters: Meter[] = [];
      for (let i = 0; i < budgets.length; i++) {
        const b = budgets[i]!;
        const m = deps.meter.hitNow?.(b.bucket, windowStart, b.limit, resetAt);
        if (m === undefined) return leaseRest(budgets, i, meters, windowStart, resetAt);
        meters.push(m);
      }
      decide(budgets, meters, resetAt);
      return undefined;
    },
  };
  return limiter;

  async function leaseRest(budgets: readonly Budget[], from: number, meters: Meter[], windowStart: number, resetAt: number): Promise<void> {
    for (let i = from; i < budgets.length; i++) meters.push(await deps.meter.hit(budgets[i]!.bucket, windowStart, budgets[i]!.limit, resetAt));
    decide(budgets, meters, resetAt);
  }

  /** Shows the budgets in the answer's headers; throws when one is spent. */
  function decide(budgets: readonly Budget[], meters: Meter[], resetAt: number): void {
    let refused = -1;
    for (let i = 0; i < meters.length; i++) {
      if (meters[i]!.used > meters[i]!.limit) {
        refused = i;
        break;
      }
    }
    const shown = refused >= 0 ? meters[refused]! : tightest(meters);
    const context = requestContext.getStore();
    if (context) {
      const headers = rateHeaders(shown);
      context.headers = headers;
      context.reply?.headers(headers);
    }
    if (refused < 0) return;
    const retryAfter = Math.max(1, Math.ceil(resetAt - deps.clock.now().getTime() / 1000));
    const { limit, what } = budgets[refused]!;
    const message = what
      ? `At most ${limit} ${what} per ${RATE_WINDOW_SECONDS} seconds; retry in ${retryAfter} s`
      : `Rate limit of ${limit} requests per ${RATE_WINDOW_SECONDS} seconds exceeded; retry in ${retryAfter} s`;
    throw new DomainError("rate_limit_exceeded", message, undefined, { "retry-after": String(retryAfter) });
  }
}

/** The budget with the least room left. */
export function tightest(meters: Meter[]): Meter {
  return meters.reduce((a, b) => (b.limit - b.used < a.limit - a.used ? b : a));
}

export function rateHeaders(m: Meter): Record<string, string> {
  return {
    "x-ratelimit-limit": String(m.limit),
    "x-ratelimit-remaining": String(Math.max(0, m.limit - m.used)),
    "x-ratelimit-window": String(RATE_WINDOW_SECONDS),
  };
}
