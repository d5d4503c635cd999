// The job that sends one delivery: one POST to the subscription's URL through the outbound
// request guard (lib/outbound: checked addresses only, no redirects), signed, with a timeout
// and a capped answer; it throws on a non-2xx answer so that the job queue retries it (3 times,
// after 5-10 s, 10-20 s, 20-40 s), and the last failed try marks the delivery failed. A receiver whose address
// is refused fails at once, with a generic message and nothing sent.
import type { Clock } from "../../lib/clock.ts";
import { open } from "../../lib/master-key.ts";
import type { JobContext } from "../../db/jobs.ts";
import { OutboundFailure, OutboundRefused, type RequestGuard } from "../../lib/outbound/request-guard.ts";
import type { WebhookDeliveriesRepo } from "./webhook-deliveries.repo.ts";
import { attemptRecord, refusal, requestHeaders, type TryResult } from "./webhook-request.ts";

/** The pg-boss queue of deliveries: one job per delivery, { deliveryId }. */
export const DELIVERY_QUEUE = "webhooks.deliver";
const RESPONSE_BODY_LIMIT = 2048;
const DELIVERY_TIMEOUT_MS = 10_000;

/** One POST; never throws (a failed or refused request is a result too). */
async function post(outbound: Pick<RequestGuard, "request">, url: string, headers: Record<string, string>, body: string): Promise<TryResult> {
  try {
    const res = await outbound.request(url, { method: "POST", headers, body, timeoutMs: DELIVERY_TIMEOUT_MS, maxResponseBytes: RESPONSE_BODY_LIMIT });
    return { status: res.status, body: res.body, failure: null };
  } catch (err) {
    if (err instanceof OutboundRefused) return { status: null, body: null, failure: null, refused: true };
    return { status: null, body: null, failure: err instanceof OutboundFailure ? err.message : "the request failed" };
  }
}

export function createDeliverySender(deps: {
  repo: Pick<WebhookDeliveriesRepo, "withSubscription" | "update" | "recordAttempt">;
  clock: Clock;
  outbound: Pick<RequestGuard, "request">;
  masterKey: Buffer;
}) {
  /** The signing secret: sealed, or in clear in a row from before migration 0011 not yet sealed. */
  const secretOf = (s: { secret: string | null; secretEnc: string | null }): string => (s.secretEnc ? open(deps.masterKey, s.secretEnc) : s.secret ?? "");

  /** The job: one POST of one delivery; throws on a non-2xx answer so the job is retried. */
  return async function deliver(data: { deliveryId: string }, ctx: JobContext): Promise<void> {
    const found = await deps.repo.withSubscription(data.deliveryId);
    if (!found || found.d.status === "succeeded") return;
    const { d, s } = found;
    const now = deps.clock.now();
    const refused = refusal(s, d, now);
    if (refused) {
      await deps.repo.update(d.id, refused);
      return;
    }
    const body = JSON.stringify(d.payload);
    const result = await post(deps.outbound, s.url, requestHeaders(d, secretOf(s), Math.floor(now.getTime() / 1000), body), body);
    const record = attemptRecord(result, now, ctx.lastAttempt);
    await deps.repo.recordAttempt(d.id, record);
    // A refused address is final: no retry would change the answer the policy gives.
    if (record.error !== null && !result.refused) throw new Error(record.error);
  };
}
