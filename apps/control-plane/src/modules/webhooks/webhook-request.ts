// The rules of one webhook POST (no I/O): whether a delivery may be sent at all, its
// headers and signature, and what a try's answer does to the delivery.
//
// Signing (Stripe style): `Berth-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<raw body>" keyed with the subscription secret (the whole whsec_... string)>`.
// Receivers recompute it over the raw body, compare in constant time and refuse a t older
// than a few minutes (replays). Also sent: Berth-Event (event name), Berth-Delivery
// (delivery id, stable across retries), Content-Type: application/json.
import { createHmac } from "node:crypto";
import type { DeliveryUpdate } from "./webhook-deliveries.repo.ts";

/** The Berth-Signature header value for a body sent at unix time t. */
export function signatureHeader(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

/** The headers of one try of a delivery, sent at unix time t. */
export function requestHeaders(d: { id: string; eventType: string }, secret: string, t: number, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "Berth-Webhooks/1",
    "berth-event": d.eventType,
    "berth-delivery": d.id,
    "berth-signature": signatureHeader(secret, t, body),
  };
}

const RESERVED = /(^|\.)(example\.(com|net|org)|example|invalid|test)$/i;
/** Hosts that can never be a real receiver (RFC 2606 and 6761 names). */
export function isReservedHost(url: string): boolean {
  try {
    return RESERVED.test(new URL(url).hostname);
  } catch {
    return true;
  }
}

/**
 * Why a delivery fails without a request, as the update that records it; null when it is to
 * be sent. A gone or disabled subscription is no try; a reserved host (documentation and
 * test names) counts as one, never reaches a receiver, and is not retried.
 */
export function refusal(
  s: { deletedAt: Date | null; enabled: boolean; url: string },
  d: { attempts: number },
  now: Date,
): DeliveryUpdate | null {
  if (s.deletedAt || !s.enabled) return { status: "failed", error: s.deletedAt ? "The subscription was deleted" : "The subscription is disabled" };
  if (isReservedHost(s.url)) {
    return { status: "failed", attempts: d.attempts + 1, lastAttemptAt: now, error: "The URL's host is a reserved example/test name; nothing was sent" };
  }
  return null;
}

/** What one try came to: the receiver's status and body, or why there was none. */
export interface TryResult {
  status: number | null;
  body: string | null;
  /** The request itself failed (no answer, timeout): a generic reason, never the low-level error. */
  failure: string | null;
  /** The receiver's address is not allowed (lib/outbound): nothing was sent. */
  refused?: boolean;
}

/** What a delivery to a refused address records: no detail about what the name resolved to. */
export const REFUSED_ERROR = "refused: the receiver's address is not allowed";

/**
 * The delivery's fields after a try (the attempt counter aside). Any 2xx is success; anything
 * else stays pending while tries remain and fails on the last one. A refused address fails
 * at once (no retry), with no status and no body.
 */
export function attemptRecord(r: TryResult, now: Date, lastAttempt: boolean): Omit<DeliveryUpdate, "attempts"> & { error: string | null } {
  if (r.refused) return { responseStatus: null, responseBody: null, error: REFUSED_ERROR, lastAttemptAt: now, status: "failed" };
  const error = r.failure !== null ? `Request failed: ${r.failure}` : r.status !== null && (r.status < 200 || r.status > 299) ? `The receiver answered HTTP ${r.status}` : null;
  const ok = error === null;
  return {
    responseStatus: r.status,
    responseBody: r.body,
    error,
    lastAttemptAt: now,
    status: ok ? "succeeded" : lastAttempt ? "failed" : "pending",
    ...(ok ? { deliveredAt: now } : {}),
  };
}
