// Shared fixtures of the public API suites: a fully populated organisation ("world") with
// two projects, keys of every kind, tasks and webhooks; a raw request sender; a snapshot of
// an organisation's rows to prove that a refused request changed nothing; body shapes.
import { randomBytes, randomUUID } from "node:crypto";
import { expect } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { TestControlPlane } from "../support/control-plane.ts";
import { publicClient, type Res } from "../support/http.ts";

export const PREFIX = "/api/public/v1";

/** A new demo organisation, the clock moved past the last rate-limit window, and clients of its two organisation keys. */
export async function freshOrganization(cp: TestControlPlane) {
  cp.clock.advance(61_000);
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  return { d, rw: publicClient(cp.app, d.api_keys.org_rw), ro: publicClient(cp.app, d.api_keys.org_ro) };
}

/** The four key kinds of the demo organisation, plus a key of ANOTHER project of the same organisation. */
export const KEY_KINDS = ["org_rw", "org_ro", "project_rw", "project_ro", "other_rw", "other_ro"] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

export interface World {
  demo: DemoOrganization;
  organizationId: string;
  serverId: string;
  /** The demo project P (the project of the project_* keys). */
  projectId: string;
  /** Project Q of the same organisation (the project of the other_* keys), with one running environment. */
  otherProjectId: string;
  /** A project without environments, which an organisation key may delete. */
  idleProjectId: string;
  env: {
    /** P's environment in status running. */
    running: string;
    /** P's environment in status stopped. */
    stopped: string;
    /** P's environment (running) holding one queued deploy task: tasks.history. */
    history: string;
    /** Q's environment (running) holding tasks.other. */
    other: string;
  };
  tasks: { history: string; other: string };
  webhooks: { project: string; other: string; org: string };
  /** Key secrets. */
  keys: Record<KeyKind, string>;
  keyIds: Record<KeyKind | "victim", string>;
  /** A read-only key of project P that GET/DELETE /api-keys/{id} target. */
  victimKey: string;
}

type Services = TestControlPlane["app"]["services"];

async function setStatus(cp: TestControlPlane, environmentId: string, status: string): Promise<void> {
  await cp.database.pool.query("update environments set status = $2 where id = $1", [environmentId, status]);
}

async function queuedDeploy(services: Services, organizationId: string, environmentId: string): Promise<string> {
  const row = await services.deployments.requestAction({ organizationId, projectId: null }, environmentId, "deploy", {
    userId: null,
    apiKeyId: null,
  });
  return row.id;
}

/** Builds one organisation with everything the access rules can be tried on. */
export async function buildWorld(cp: TestControlPlane, opts: { plan?: string; name?: string } = {}): Promise<World> {
  const services = cp.app.services;
  const demo = await createDemoOrganization(cp.database.db, services, opts);
  const organizationId = demo.organization_id;
  const org = { organizationId, projectId: null };

  const history = await services.environments.create(org, { project_id: demo.project_id, name: "history" });
  await setStatus(cp, history.id, "running");
  const other = await services.projects.create(org, { name: "Other ERP", server_id: demo.server_id, default_branch: "main" });
  const otherEnv = await services.environments.create(org, { project_id: other.id, name: "production" });
  await setStatus(cp, otherEnv.id, "running");
  const idle = await services.projects.create(org, { name: "Idle ERP", server_id: demo.server_id });

  const historyTask = await queuedDeploy(services, organizationId, history.id);
  const otherTask = await queuedDeploy(services, organizationId, otherEnv.id);

  const hook = async (projectId: string | null, url: string) =>
    (await services.webhooks.create({ organizationId, projectId }, { url, events: ["deployment.completed"] })).id;
  const webhooks = {
    project: await hook(demo.project_id, "https://hooks.example.com/project"),
    other: await hook(other.id, "https://hooks.example.com/other"),
    org: await hook(null, "https://hooks.example.com/org"),
  };

  const newKey = (projectId: string | null, access: "read_only" | "full_access", name: string) =>
    services.apiKeys.create({ organizationId, projectId, access, name, createdBy: null });
  const otherRw = await newKey(other.id, "full_access", "other project full access");
  const otherRo = await newKey(other.id, "read_only", "other project read-only");
  const victim = await newKey(demo.project_id, "read_only", "victim");

  const { data: listed } = await services.apiKeys.list(org, { limit: 100 });
  const idOf = (name: string) => {
    const found = listed.find((k) => k.name === name);
    if (!found) throw new Error(`demo key ${name} not found`);
    return found.id;
  };

  return {
    demo,
    organizationId,
    serverId: demo.server_id,
    projectId: demo.project_id,
    otherProjectId: other.id,
    idleProjectId: idle.id,
    env: { running: demo.environments.running, stopped: demo.environments.stopped, history: history.id, other: otherEnv.id },
    tasks: { history: historyTask, other: otherTask },
    webhooks,
    keys: { ...demo.api_keys, other_rw: otherRw.key, other_ro: otherRo.key },
    keyIds: {
      org_rw: idOf("demo organisation full access"),
      org_ro: idOf("demo organisation read-only"),
      project_rw: idOf("demo project full access"),
      project_ro: idOf("demo project read-only"),
      other_rw: otherRw.id,
      other_ro: otherRo.id,
      victim: victim.id,
    },
    victimKey: victim.key,
  };
}

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface RequestSpec {
  method: Method;
  /** Path below /api/public/v1. */
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Sends a request with exactly the given Authorization header (null: none). */
export async function send(cp: TestControlPlane, authorization: string | null, req: RequestSpec): Promise<Res> {
  const client = publicClient(cp.app, null, authorization === null ? {} : { authorization });
  switch (req.method) {
    case "GET":
      return client.get(req.path, req.headers);
    case "POST":
      return client.post(req.path, req.body, req.headers);
    case "PATCH":
      return client.patch(req.path, req.body, req.headers);
    case "DELETE":
      return client.delete(req.path, req.headers);
  }
}

export const bearer = (key: string) => `Bearer ${key}`;

/** Table rows as [name, row] for it.each("%s"): "$label" would cut long names short. */
export const named = <T extends { label: string }>(rows: T[]): [string, T][] => rows.map((r) => [r.label, r]);

/** Every row an organisation owns (last_used_at aside, which any authenticated call may touch). */
export async function snapshot(cp: TestControlPlane, organizationId: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of ["organizations", "servers", "projects", "environments", "deployments", "webhook_subscriptions", "api_keys"]) {
    const column = table === "organizations" ? "id" : "organization_id";
    const { rows } = await cp.database.pool.query<{ row: unknown }>(
      `select to_jsonb(t) - 'last_used_at' as row from ${table} t where ${column} = $1 order by id`,
      [organizationId],
    );
    out[table] = rows.map((r) => r.row);
  }
  return out;
}

export async function taskCount(cp: TestControlPlane, environmentId: string): Promise<number> {
  const { rows } = await cp.database.pool.query<{ n: number }>("select count(*)::int as n from deployments where environment_id = $1", [
    environmentId,
  ]);
  return rows[0]!.n;
}

export const randomId = () => randomUUID();
/** Well-formed key text that no organisation holds. */
export const unknownKey = (access: "rw" | "ro" = "rw") => `svc_live_${access}_${randomBytes(24).toString("base64url")}`;

// ---- Body shapes: a missing or mistyped field fails ------------------------------------------

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const uuid = expect.stringMatching(UUID_RE);
const isoTime = expect.stringMatching(TIME_RE);
type Pred = (v: unknown) => boolean;
const str: Pred = (v) => typeof v === "string";
const num: Pred = (v) => typeof v === "number" && Number.isInteger(v);
const isUuid: Pred = (v) => typeof v === "string" && UUID_RE.test(v);
const isTime: Pred = (v) => typeof v === "string" && TIME_RE.test(v);
const nullOr = (pred: Pred) => expect.toSatisfy((v: unknown) => v === null || pred(v), "null or the expected type");

export function expectError(res: Res, status: number, code: string): void {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error: code });
  expect(res.body.message).toEqual(expect.any(String));
}

export function expectPage(body: unknown, itemShape: (item: unknown) => void): { ids: string[]; total: number } {
  expect(body).toEqual({
    data: expect.any(Array),
    pagination: { has_more: expect.any(Boolean), next_cursor: nullOr(str), total: expect.any(Number) },
  });
  const page = body as { data: { id: string }[]; pagination: { total: number } };
  for (const item of page.data) itemShape(item);
  return { ids: page.data.map((d) => d.id), total: page.pagination.total };
}

/**
 * Every field the contract names, with its type. Further fields are allowed (public spec 9:
 * new fields are non-breaking additions), except the ones listed as forbidden (secrets).
 */
function expectFields(body: unknown, fields: Record<string, unknown>, forbidden: string[] = []): void {
  expect(body).toEqual(expect.objectContaining(fields));
  for (const f of forbidden) expect(body).not.toHaveProperty(f);
}

export function expectProject(body: unknown): void {
  expectFields(body, {
    id: uuid,
    name: expect.any(String),
    erp_version: nullOr(str),
    git_repo_url: nullOr(str),
    default_branch: nullOr(str),
    environment_count: expect.any(Number),
    server_id: nullOr(isUuid),
    created_at: isoTime,
  });
}

export function expectEnvironment(body: unknown): void {
  expectFields(body, {
    id: uuid,
    project_id: uuid,
    server_id: nullOr(isUuid),
    name: expect.any(String),
    status: expect.any(String),
    git_branch: expect.any(String),
    auto_deploy: expect.any(Boolean),
    domain: nullOr(str),
    cpu_cores: expect.any(Number),
    ram_mb: expect.any(Number),
    disk_gb: expect.any(Number),
    workers: expect.any(Number),
    is_active: expect.any(Boolean),
    container_id: nullOr(str),
    container_name: nullOr(str),
    migration_id: nullOr(isUuid),
    migration_restore_completed: expect.any(Boolean),
    migration_restore_completed_at: nullOr(isTime),
    created_at: isoTime,
    updated_at: isoTime,
    aliases: expect.any(Array),
    url: nullOr(str),
    certificate: { status: expect.stringMatching(/^(none|pending|valid|error|not_requested)$/), not_after: nullOr(isTime), error: nullOr(str), checked_at: nullOr(isTime) },
    dns: { status: expect.stringMatching(/^(ok|mismatch|unresolved|unchecked)$/), expected: expect.any(Array), resolved: expect.any(Array) },
  });
}

export function expectTask(body: unknown): void {
  expectFields(body, {
    id: uuid,
    type: expect.any(String),
    status: expect.stringMatching(/^(pending|queued|running|completed|failed|cancelled)$/),
    environment_id: nullOr(isUuid),
    progress_percent: expect.any(Number),
    current_step: nullOr(str),
    steps_completed: expect.any(Number),
    total_steps: expect.any(Number),
    started_at: nullOr(isTime),
    completed_at: nullOr(isTime),
    duration_seconds: nullOr(num),
    error_message: nullOr(str),
    triggered_by: nullOr(str),
    created_at: isoTime,
  });
}

export function expectServer(body: unknown): void {
  expectFields(body, {
    id: uuid,
    name: expect.any(String),
    provider: expect.any(String),
    region: nullOr(str),
    cpu_cores: expect.any(Number),
    ram_mb: expect.any(Number),
    disk_gb: expect.any(Number),
    environment_count: expect.any(Number),
    status: expect.any(String),
    last_seen_at: nullOr(isTime),
    proxy: expect.toSatisfy((v: unknown) => v === null || (typeof v === "object" && "running" in v && "public_addresses" in v), "null or the proxy"),
  });
}

const webhookFields = {
  id: uuid,
  url: expect.any(String),
  events: expect.any(Array),
  description: nullOr(str),
  enabled: expect.any(Boolean),
  project_id: nullOr(isUuid),
  created_at: isoTime,
  updated_at: isoTime,
};

/** A webhook as read back: never its signing secret. */
export function expectWebhook(body: unknown): void {
  expectFields(body, webhookFields, ["secret"]);
}

export function expectWebhookWithSecret(body: unknown): void {
  expectFields(body, { ...webhookFields, secret: expect.stringMatching(/^whsec_/) });
}

export function expectApiKey(body: unknown): void {
  expectFields(body, {
    id: uuid,
    name: expect.any(String),
    prefix: expect.stringMatching(/^svc_live_(ro|rw)_/),
    access: expect.stringMatching(/^(read_only|full_access)$/),
    scope: expect.stringMatching(/^(organization|project)$/),
    project_id: nullOr(isUuid),
    created_at: isoTime,
    last_used_at: nullOr(isTime),
    revoked_at: nullOr(isTime),
  }, ["key", "key_hash", "secret"]);
}

export function expectActionResponse(body: unknown, environmentId: string): string {
  const { admin_password: password, admin_login_password: login, ...rest } = body as Record<string, unknown>;
  expect(rest).toEqual({ task_id: uuid, status: "queued", environment_id: environmentId, poll_url: expect.any(String) });
  // deploy and redeploy also answer the master and administrator passwords their environment got now (or null).
  if (password !== undefined && password !== null) expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
  if (login !== undefined && login !== null) expect(login).toMatch(/^[A-Za-z0-9_-]{32}$/);
  const taskId = (body as { task_id: string }).task_id;
  expect((body as { poll_url: string }).poll_url).toBe(`${PREFIX}/deployments/${taskId}`);
  return taskId;
}
