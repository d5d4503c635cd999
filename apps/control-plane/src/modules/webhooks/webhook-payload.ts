// What the fan-out makes of organisation events (no I/O): which webhook events an org_events
// row stands for, the JSON body each delivery carries, which subscriptions receive it, and
// where the fan-out's cursor goes after a batch. Environment URLs are looked up when the
// batch is fanned out (they follow the installation's base domain, which SQL does not know).
import { isDeployKind } from "../deployments/operations/deployment-state.ts";
import type { FanOutCursor, LiveSubscription, NewDelivery, OrgEventRow } from "./webhook-deliveries.repo.ts";
import type { WebhookEvent } from "./webhook-events.ts";

/** The org_events types that can become webhooks (the status events of deployment-state.ts's triggers). */
export const FANOUT_EVENT_TYPES = ["deployment.status", "environment.status", "backup.failed", "backup.missed"] as const;

/** Webhook event names an org_events row stands for (none for most rows). */
export function webhookEventsFor(e: Pick<OrgEventRow, "type" | "data">): WebhookEvent[] {
  const d = e.data;
  if (e.type === "backup.failed" || e.type === "backup.missed") return [e.type];
  if (e.type === "environment.status") return d.status !== d.previous_status ? ["environment.status_changed"] : [];
  if (e.type !== "deployment.status" || !isDeployKind(String(d.kind)) || d.status === d.previous_status) return [];
  if (d.status === "success") return ["deploy.completed", "deployment.completed"];
  if (d.status === "failed") return ["deploy.failed", "deployment.failed"];
  return [];
}

/** The URL each environment is served at (null: none), by environment id, when the batch is fanned out. */
export type EnvironmentUrls = ReadonlyMap<string, string | null>;

/** The module tests each deployment ran (deployments.tests_result), by deployment id, when the batch is fanned out. */
export type DeploymentTests = ReadonlyMap<string, unknown>;

function payloadData(e: Pick<OrgEventRow, "type" | "data">, urls: EnvironmentUrls, tests: DeploymentTests): Record<string, unknown> {
  const d = e.data;
  const url = urls.get(String(d.environment_id)) ?? null;
  if (e.type === "backup.failed" || e.type === "backup.missed") {
    return {
      backup: {
        environment_id: d.environment_id,
        project_id: d.project_id,
        environment_url: url,
        backup_id: d.backup_id ?? null,
        backup_type: d.backup_type ?? "scheduled",
        slot_at: d.slot_at ?? null,
        reason: d.reason,
        at: d.at,
      },
    };
  }
  if (e.type === "environment.status") {
    return { environment: { id: d.environment_id, project_id: d.project_id, status: d.status, previous_status: d.previous_status ?? null, url } };
  }
  return {
    deployment: {
      id: d.deployment_id,
      project_id: d.project_id,
      environment_id: d.environment_id,
      kind: d.kind,
      version: d.version,
      trigger: d.trigger,
      status: d.status,
      error_message: d.error_message ?? null,
      environment_url: url,
      // {run, failed, errors, failures: [{test, module, kind, traceback}]}: a development build's (or a staging deploy's) module tests; null: none ran.
      tests: tests.get(String(d.deployment_id)) ?? null,
    },
  };
}

/** Subscriptions grouped by organisation, each group in the given order. */
export function subscriptionsByOrganization(subs: LiveSubscription[]): Map<string, LiveSubscription[]> {
  const byOrg = new Map<string, LiveSubscription[]>();
  for (const s of subs) byOrg.set(s.organization_id, [...(byOrg.get(s.organization_id) ?? []), s]);
  return byOrg;
}

/**
 * The deliveries a batch of events makes, in event order: one per (event, subscription of
 * its organisation, webhook name the subscription asked for); a project-bound subscription
 * gets its project's events only.
 */
export function deliveriesFor(events: OrgEventRow[], subsByOrg: Map<string, LiveSubscription[]>, urls: EnvironmentUrls = new Map(), tests: DeploymentTests = new Map()): NewDelivery[] {
  const out: NewDelivery[] = [];
  for (const e of events) {
    const names = webhookEventsFor(e);
    for (const sub of subsByOrg.get(e.organization_id) ?? []) {
      if (sub.project_id && sub.project_id !== e.data.project_id) continue;
      for (const name of names) {
        if (!sub.events.includes(name)) continue;
        out.push({
          organizationId: e.organization_id,
          subscriptionId: sub.id,
          eventId: `evt_${e.id}:${name}`,
          eventType: name,
          payload: { id: `evt_${e.id}`, type: name, created_at: e.created_at.toISOString(), organization_id: e.organization_id, data: payloadData(e, urls, tests) },
        });
      }
    }
  }
  return out;
}

/**
 * Where the cursor goes after a batch: after its last row when the batch was full (more may
 * follow), else to `caughtUp` (xmin, 0): everything before xmin is done, also for
 * organisations without subscriptions, so a new subscription starts from now.
 */
export function nextCursor(events: Pick<OrgEventRow, "tx" | "id">[], batchSize: number, caughtUp: FanOutCursor): FanOutCursor {
  const last = events[events.length - 1];
  return events.length === batchSize && last ? { tx: last.tx, id: last.id } : caughtUp;
}
