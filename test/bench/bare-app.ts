// The baseline: the same two reads on a bare Fastify with a plain pg Pool. Same SQL text
// as drizzle generates for the repos (captured from the pool), same JSON shape, but no
// authentication, rate metering, idempotency hooks, schemas or error mapping. The caller
// names its organisation in x-organization-id, which is what the API key resolves to.
//
// What the baseline skips, the public spec requires of every product request, so full/bare
// includes it: authenticating the API key (a hash and a per-replica cache lookup), metering
// it (leases from the shared counters in PostgreSQL: at the bench's key spread, one lease per
// key at each new 60 s window, the keys' leases coalesced into a few statements), the X-RateLimit-* and
// X-Request-Id headers, request metrics, validation of the path and query, and the response
// schema. Neither side is slowed to match the other.
//
// With `meter`, it is the attribution variant "bare-auth": the same plus the statement the
// product used to authenticate and meter with on every request (AUTH_AND_METER below), one
// extra round trip per request. The product has since cached keys and leased budgets
// instead (modules/api-keys/key-cache.ts, modules/rate-limits/lease-meter.ts), so bare-auth
// now costs more than the product's metering does: an upper bound, not its measure.
import { createHash, createHmac } from "node:crypto";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import type pg from "pg";
import { STEP_NAMES, type StepId } from "@berth/protocol";
// The product's status-to-task table: a plain lookup, nothing the bare side should pay less for.
import { toTaskStatus } from "../../apps/control-plane/src/modules/deployments/operations/deployment-state.ts";

const PAGE_LIMIT = 20;

/** ProjectsRepo.list: the page query (limit + 1 rows, to know has_more)... */
const PROJECTS_PAGE = `select "id", "organization_id", "server_id", "name", "erp_version", "git_repo_url", "default_branch", "created_at", "updated_at", "deleted_at", (select count(*)::int from environments e where e.project_id = "projects"."id" and e.is_active) from "projects" where ("projects"."organization_id" = $1 and "projects"."deleted_at" is null) order by "projects"."created_at" desc, "projects"."id" desc limit $2`;
/** ...then the total. */
const PROJECTS_TOTAL = `select count(*) from "projects" where ("projects"."organization_id" = $1 and "projects"."deleted_at" is null)`;
/** DeploymentsRepo.getTask: the columns the task shows. */
const TASK = `select "deployments"."id", "deployments"."kind", "deployments"."status", "deployments"."environment_id", "deployments"."progress_percent", "deployments"."current_step", "deployments"."steps_completed", "deployments"."total_steps", "deployments"."started_at", "deployments"."completed_at", "deployments"."error_message", "deployments"."triggered_by", "deployments"."created_at", "deployments"."modules_result" from "deployments" inner join "projects" on "projects"."id" = "deployments"."project_id" where ("deployments"."id" = $1 and "deployments"."organization_id" = $2 and "projects"."deleted_at" is null)`;

/** What the product's repos send per route, checked against a capture before every run. */
export const BASELINE_SQL = { projects: [PROJECTS_PAGE, PROJECTS_TOTAL], task: [TASK] };

interface ProjectRow {
  id: string;
  name: string;
  erp_version: string | null;
  git_repo_url: string | null;
  default_branch: string | null;
  server_id: string | null;
  created_at: Date;
  count: number;
}

interface TaskRow {
  id: string;
  kind: string;
  status: string;
  environment_id: string;
  progress_percent: number;
  current_step: string | null;
  steps_completed: number;
  total_steps: number;
  started_at: Date | null;
  completed_at: Date | null;
  error_message: string | null;
  triggered_by: string | null;
  created_at: Date;
  modules_result: unknown;
}

/** api-key-auth.ts's former AUTH_AND_METER (before the key cache and leases). */
const AUTH_AND_METER = `
with k as (
  select k.id, k.organization_id, k.project_id, k.access, k.revoked_at, o.plan
  from api_keys k join organizations o on o.id = k.organization_id
  where k.key_hash = $1
), hit as (
  insert into rate_limit_counters as c (bucket, window_start, count)
  select 'key:' || k.id, $2, 1 from k where k.revoked_at is null and k.plan <> 'free'
  on conflict (bucket, window_start) do update set count = c.count + 1
  returning c.count
), webhook_hit as (
  insert into rate_limit_counters as c (bucket, window_start, count)
  select 'webhook:' || k.id, $2, 1 from k where $3::boolean and k.revoked_at is null and k.plan <> 'free'
  on conflict (bucket, window_start) do update set count = c.count + 1
  returning c.count
)
select k.id, k.organization_id, k.project_id, k.access, k.revoked_at, k.plan,
       (select count from hit) as used, (select count from webhook_hit) as webhook_used
from k`;

declare module "fastify" {
  interface FastifyRequest {
    benchOrganization: string;
  }
}

export function buildBareApp(pool: pg.Pool, opts: { meter?: boolean; cursorSecret?: string } = {}): FastifyInstance {
  const app = Fastify({ logger: false });
  const cursorSecret = opts.cursorSecret ?? "bare-cursor-secret";
  const organizationOf = (request: FastifyRequest) => request.benchOrganization || String(request.headers["x-organization-id"]);
  if (opts.meter) {
    app.decorateRequest("benchOrganization", "");
    app.addHook("onRequest", async (request, reply) => {
      const key = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")?.[1] ?? "";
      const windowStart = Math.floor(Date.now() / 60_000) * 60;
      const { rows } = await pool.query<{ organization_id: string; used: number | null }>({
        name: "bench_auth_and_meter",
        text: AUTH_AND_METER,
        values: [createHash("sha256").update(key).digest("hex"), windowStart, false],
      });
      const row = rows[0];
      if (!row) return reply.code(401).send({ error: "invalid_api_key", message: "The API key is not valid" });
      if ((row.used ?? 0) > 120) return reply.code(429).send({ error: "rate_limit_exceeded", message: "Rate limit exceeded" });
      request.benchOrganization = row.organization_id;
    });
  }
  // Signing the cursor is part of the page's real work, so the baseline does it too.
  const cursor = (createdAt: Date, id: string) => {
    const body = Buffer.from(JSON.stringify(["projects", createdAt.getTime(), id])).toString("base64url");
    return `${body}.${createHmac("sha256", cursorSecret).update(body).digest().subarray(0, 16).toString("base64url")}`;
  };

  app.get("/api/public/v1/projects", async (request) => {
    const org = organizationOf(request);
    // Page and total in parallel, as the real repository runs them.
    const [{ rows }, totals] = await Promise.all([
      // Named, i.e. prepared once per connection, as the real repository's statements are.
      pool.query<ProjectRow>({ name: "bare_projects_page", text: PROJECTS_PAGE, values: [org, PAGE_LIMIT + 1] }),
      pool.query<{ count: string }>({ name: "bare_projects_total", text: PROJECTS_TOTAL, values: [org] }),
    ]);
    const hasMore = rows.length > PAGE_LIMIT;
    const items = hasMore ? rows.slice(0, PAGE_LIMIT) : rows;
    const last = items[items.length - 1];
    return {
      data: items.map((p) => ({
        id: p.id,
        name: p.name,
        erp_version: p.erp_version,
        git_repo_url: p.git_repo_url,
        default_branch: p.default_branch,
        environment_count: p.count,
        server_id: p.server_id,
        created_at: p.created_at.toISOString(),
      })),
      pagination: {
        has_more: hasMore,
        next_cursor: hasMore && last ? cursor(last.created_at, last.id) : null,
        total: Number(totals.rows[0]?.count ?? 0),
      },
    };
  });

  app.get<{ Params: { id: string } }>("/api/public/v1/deployments/:id", async (request, reply) => {
    const { rows } = await pool.query<TaskRow>({ name: "bare_task", text: TASK, values: [request.params.id, organizationOf(request)] });
    const d = rows[0];
    if (!d) return reply.code(404).send({ error: "not_found", message: "Task not found" });
    return {
      id: d.id,
      type: d.kind,
      status: toTaskStatus(d.status),
      environment_id: d.environment_id,
      progress_percent: d.progress_percent,
      current_step: d.current_step ? (STEP_NAMES[d.current_step as StepId] ?? d.current_step) : null,
      steps_completed: d.steps_completed,
      total_steps: d.total_steps,
      started_at: d.started_at?.toISOString() ?? null,
      completed_at: d.completed_at?.toISOString() ?? null,
      duration_seconds:
        d.started_at && d.completed_at ? Math.max(0, Math.round((d.completed_at.getTime() - d.started_at.getTime()) / 1000)) : null,
      error_message: d.error_message,
      triggered_by: d.triggered_by,
      created_at: d.created_at.toISOString(),
      modules: Array.isArray(d.modules_result) ? d.modules_result : null,
    };
  });
  return app;
}
