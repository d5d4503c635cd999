// Limits of public spec section 8: per key, fixed 60-second windows, not configurable.
import type { KeyAccess } from "../modules/api-keys/api-key-format.ts";

export const RATE_WINDOW_SECONDS = 60;
export const KEY_LIMITS: Record<KeyAccess, number> = { read_only: 120, full_access: 20 };
/** Webhook create/update/delete, counted in addition to the key's own limit. */
export const WEBHOOK_WRITE_LIMIT = 10;

export interface Meter {
  limit: number;
  used: number;
  resetAt: number; // epoch seconds
}

/** The bucket to report: the exhausted one, else the one with the least room left. */
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
