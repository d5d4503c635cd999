// One view of a deployment for the commands that start and follow them, whichever API the
// caller reaches: a signed-in person the platform API (deployment records, skip-paged logs,
// step names from /progress), an API key the public API (tasks, cursor-paged logs). Both
// hand out tickets for the same event stream (GET /api/v1/events). What a status means
// (still running, succeeded, failed, cancelled) is decided here, once, over the statuses the
// generated types list, so a status the API adds fails to compile until it is placed.
import { ok, type PlatformComponents, type PublicComponents } from "@berth/protocol/api-client";
import type { Context } from "./context.ts";

type DeploymentStatus = PlatformComponents["schemas"]["DeploymentRecord"]["status"];
type TaskStatus = PublicComponents["schemas"]["Task"]["status"];

export type Outcome = "active" | "succeeded" | "failed" | "cancelled";

/** The platform's statuses, which the event stream's deployment.status events carry too. */
export const DEPLOYMENT_OUTCOME: Record<DeploymentStatus, Outcome> = {
  pending: "active",
  queued: "active",
  building: "active",
  deploying: "active",
  running: "active",
  success: "succeeded",
  rolled_back: "succeeded",
  destroyed: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
};

/** The public API's task statuses. */
export const TASK_OUTCOME: Record<TaskStatus, Outcome> = {
  pending: "active",
  queued: "active",
  running: "active",
  completed: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
};

export function outcomeOfStatus(status: string): Outcome {
  return DEPLOYMENT_OUTCOME[status as DeploymentStatus] ?? "active";
}

/** A deployment as the follow loop needs it; `record` is the API's own object (printed with --json). */
export interface DeploymentState {
  id: string;
  status: string;
  outcome: Outcome;
  step: string | null;
  percent: number;
  error: string | null;
  record: unknown;
}

export interface LogLine {
  id: string;
  timestamp: string;
  level: string;
  step: string | null;
  message: string;
}

export interface StreamTicket {
  /** The stream's URL with organisation and ticket. */
  url: string;
}

/** What following a deployment needs from the API. */
export interface DeploymentSource {
  get(id: string): Promise<DeploymentState>;
  /** Every stored log line, oldest first. */
  logs(id: string): Promise<LogLine[]>;
  /** The operation's steps in order (ids and names), when the API tells them. */
  steps(id: string): Promise<{ id: string; name: string }[] | null>;
  /** A single-use ticket for the event stream of the deployment's organisation. */
  ticket(state: DeploymentState): Promise<StreamTicket>;
}

const PAGE = 500;

export function deploymentSource(ctx: Context): DeploymentSource {
  const c = ctx.credentials();
  return c.kind === "api_key" ? publicSource(ctx, c.url) : platformSource(ctx, c.url);
}

function platformSource(ctx: Context, url: string): DeploymentSource {
  const api = ctx.platform();
  const state = (r: PlatformComponents["schemas"]["DeploymentRecord"]): DeploymentState => ({
    id: r.id,
    status: r.status,
    outcome: DEPLOYMENT_OUTCOME[r.status],
    step: null,
    percent: 0,
    error: r.error_message,
    record: r,
  });
  return {
    async get(id) {
      const r = await ok(api.GET("/deployments/{deployment_id}", { params: { path: { deployment_id: id } } }));
      // The record has no step: the progress has (and the percentage).
      const p = await ok(api.GET("/deployments/{deployment_id}/progress", { params: { path: { deployment_id: id } } }));
      return { ...state(r), step: p.current_step || null, percent: p.progress_percent };
    },
    async logs(id) {
      const out: LogLine[] = [];
      for (let skip = 0; ; skip += PAGE) {
        const page = await ok(api.GET("/deployments/{deployment_id}/logs", { params: { path: { deployment_id: id }, query: { skip, limit: PAGE } } }));
        out.push(...page.logs);
        if (page.logs.length < PAGE) return out;
      }
    },
    async steps(id) {
      const p = await ok(api.GET("/deployments/{deployment_id}/progress", { params: { path: { deployment_id: id } } }));
      return p.steps.map((s) => ({ id: s.id, name: s.name }));
    },
    async ticket(s) {
      const organizationId = (s.record as PlatformComponents["schemas"]["DeploymentRecord"]).organization_id;
      const t = await ok(api.POST("/events/tickets", { body: { organization_id: organizationId } }));
      return { url: `${url}/api/v1/events?${new URLSearchParams({ organization_id: organizationId, ticket: t.ticket })}` };
    },
  };
}

function publicSource(ctx: Context, url: string): DeploymentSource {
  const api = ctx.public();
  return {
    async get(id) {
      const t = await ok(api.GET("/deployments/{id}", { params: { path: { id } } }));
      return { id: t.id, status: t.status, outcome: TASK_OUTCOME[t.status], step: t.current_step, percent: t.progress_percent, error: t.error_message, record: t };
    },
    async logs(id) {
      const out: LogLine[] = [];
      let cursor: string | undefined;
      do {
        const page = await ok(api.GET("/deployments/{id}/logs", { params: { path: { id }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } } }));
        out.push(...page.data);
        cursor = page.pagination.next_cursor ?? undefined;
      } while (cursor);
      return out;
    },
    async steps() {
      return null;
    },
    async ticket() {
      const t = await ok(api.POST("/events/tickets", {}));
      return { url: `${url}${t.stream_url}` };
    },
  };
}
