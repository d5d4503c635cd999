// Access matrix of the public API (public spec 5, 7): every endpoint against every key kind
// (organisation/project x full-access/read-only, plus a key of another project of the same
// organisation), then every endpoint against every authentication failure. Each case runs
// on its own freshly built organisation, so neither rate limits nor earlier actions interfere;
// a refused request must leave every row of the organisation unchanged.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import type { Res } from "../support/http.ts";
import {
  bearer,
  buildWorld,
  expectActionResponse,
  expectApiKey,
  expectEnvironment,
  expectError,
  expectPage,
  expectProject,
  expectServer,
  expectTask,
  expectWebhook,
  expectWebhookWithSecret,
  KEY_KINDS,
  named,
  PREFIX,
  send,
  snapshot,
  taskCount,
  unknownKey,
  type KeyKind,
  type RequestSpec,
  type World,
} from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.close();
});

interface Outcome {
  status: number;
  error?: string;
}
const ok = (status: number): Outcome => ({ status });
const RO: Outcome = { status: 403, error: "read_only_key" };
const PS: Outcome = { status: 403, error: "project_scoped_key" };
const NF: Outcome = { status: 404, error: "not_found" };

// Rows of the matrix, columns in KEY_KINDS order: org_rw, org_ro, project_rw, project_ro, other_rw, other_ro.
const row = (...outcomes: [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome]): Record<KeyKind, Outcome> =>
  Object.fromEntries(KEY_KINDS.map((k, i) => [k, outcomes[i]!])) as Record<KeyKind, Outcome>;
/** Reads of resources anyone in the organisation may see. */
const READ_ANY = row(ok(200), ok(200), ok(200), ok(200), ok(200), ok(200));
/** Reads of a resource of project P: the other project's keys must not see it. */
const READ_P = row(ok(200), ok(200), ok(200), ok(200), NF, NF);
/** Writes on a resource of project P. */
const WRITE_P = (status: number) => row(ok(status), RO, ok(status), RO, NF, RO);

interface Ctx {
  w: World;
  kind: KeyKind;
  /** Calls the API with the key of the case. */
  call(req: RequestSpec): Promise<Res>;
  /** Calls the API with another key of the world. */
  callAs(kind: KeyKind, req: RequestSpec): Promise<Res>;
}

interface Endpoint {
  endpoint: string;
  request(w: World, kind: KeyKind): RequestSpec;
  expected: Record<KeyKind, Outcome>;
  /** Checks a successful answer (status already checked) and its effect. */
  verify(res: Res, ctx: Ctx): Promise<void> | void;
}

/** What each key kind should find in a list: organisation keys everything, project keys their project's part. */
const visible = <T>(kind: KeyKind, sets: { org: T[]; project: T[]; other: T[] }): T[] =>
  kind.startsWith("org_") ? sets.org : kind.startsWith("project_") ? sets.project : sets.other;
const sorted = (ids: string[]) => [...ids].sort();

const ACTION_TARGET = { deploy: "running", redeploy: "running", restart: "running", stop: "running", start: "stopped" } as const;
type Action = keyof typeof ACTION_TARGET;

function actionEndpoint(action: Action, segment: "" | "actions/"): Endpoint {
  return {
    endpoint: `POST /environments/{id}/${segment}${action}`,
    request: (w) => ({ method: "POST", path: `/environments/${w.env[ACTION_TARGET[action]]}/${segment}${action}` }),
    expected: WRITE_P(202),
    async verify(res, { w, call }) {
      const envId = w.env[ACTION_TARGET[action]];
      const taskId = expectActionResponse(res.body, envId);
      expect(await taskCount(cp, envId)).toBe(1);
      const polled = await call({ method: "GET", path: (res.body.poll_url as string).slice(PREFIX.length) });
      expect(polled.status).toBe(200);
      expectTask(polled.body);
      expect(polled.body).toMatchObject({ id: taskId, type: action, status: "queued", environment_id: envId, triggered_by: null, completed_at: null });
    },
  };
}

const ENDPOINTS: Endpoint[] = [
  {
    endpoint: "GET /projects",
    request: () => ({ method: "GET", path: "/projects?limit=100" }),
    expected: READ_ANY,
    verify(res, { w, kind }) {
      const { ids, total } = expectPage(res.body, expectProject);
      const want = visible(kind, { org: [w.projectId, w.otherProjectId, w.idleProjectId], project: [w.projectId], other: [w.otherProjectId] });
      expect(sorted(ids)).toEqual(sorted(want));
      expect(total).toBe(want.length);
    },
  },
  {
    endpoint: "POST /projects",
    request: (w) => ({
      method: "POST",
      path: "/projects",
      body: { name: "Created ERP", server_id: w.serverId, git_repo_url: "https://git.example.com/acme/created.git", erp_version: "17.0" },
    }),
    expected: row(ok(201), RO, PS, RO, PS, RO),
    async verify(res, { w, call }) {
      expectProject(res.body);
      expect(res.body).toMatchObject({
        name: "Created ERP",
        server_id: w.serverId,
        git_repo_url: "https://git.example.com/acme/created.git",
        erp_version: "17.0",
        default_branch: "main",
        environment_count: 0,
      });
      const again = await call({ method: "GET", path: `/projects/${res.body.id}` });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: res.body });
    },
  },
  {
    endpoint: "GET /projects/{id}",
    request: (w) => ({ method: "GET", path: `/projects/${w.projectId}` }),
    expected: READ_P,
    verify(res, { w }) {
      expectProject(res.body);
      expect(res.body).toMatchObject({ id: w.projectId, name: "Demo ERP", server_id: w.serverId, erp_version: "17.0", environment_count: 3 });
    },
  },
  {
    endpoint: "PATCH /projects/{id}",
    request: (w) => ({ method: "PATCH", path: `/projects/${w.projectId}`, body: { name: "Renamed ERP" } }),
    expected: WRITE_P(200),
    async verify(res, { w, callAs }) {
      expectProject(res.body);
      expect(res.body).toMatchObject({
        id: w.projectId,
        name: "Renamed ERP",
        default_branch: "main",
        git_repo_url: "https://git.example.com/demo/erp-addons.git",
      });
      const again = await callAs("org_ro", { method: "GET", path: `/projects/${w.projectId}` });
      expect(again.body.name).toBe("Renamed ERP");
    },
  },
  {
    endpoint: "DELETE /projects/{id}",
    // Organisation keys delete the idle project; project keys try their own project P.
    request: (w, kind) => ({
      method: "DELETE",
      path: `/projects/${kind.startsWith("org_") ? w.idleProjectId : w.projectId}`,
      headers: { "x-confirm-delete": "true" },
    }),
    expected: row(ok(204), RO, PS, RO, PS, RO),
    async verify(res, { w, callAs }) {
      expect(res.body).toBe("");
      const gone = await callAs("org_ro", { method: "GET", path: `/projects/${w.idleProjectId}` });
      expectError(gone, 404, "not_found");
      const list = await callAs("org_ro", { method: "GET", path: "/projects?limit=100" });
      expect(sorted(list.body.data.map((p: { id: string }) => p.id))).toEqual(sorted([w.projectId, w.otherProjectId]));
    },
  },
  {
    endpoint: "GET /projects/{id}/environments",
    request: (w) => ({ method: "GET", path: `/projects/${w.projectId}/environments?limit=100` }),
    expected: READ_P,
    verify(res, { w }) {
      const { ids, total } = expectPage(res.body, expectEnvironment);
      expect(sorted(ids)).toEqual(sorted([w.env.running, w.env.stopped, w.env.history]));
      expect(total).toBe(3);
      for (const env of res.body.data) expect(env.project_id).toBe(w.projectId);
    },
  },
  {
    endpoint: "GET /environments/{id}",
    request: (w) => ({ method: "GET", path: `/environments/${w.env.running}` }),
    expected: READ_P,
    verify(res, { w }) {
      expectEnvironment(res.body);
      expect(res.body).toMatchObject({ id: w.env.running, project_id: w.projectId, server_id: w.serverId, name: "production", status: "running" });
    },
  },
  {
    endpoint: "POST /environments",
    request: (w) => ({ method: "POST", path: "/environments", body: { project_id: w.projectId, name: "qa" } }),
    expected: WRITE_P(201),
    async verify(res, { w, call }) {
      expectEnvironment(res.body);
      expect(res.body).toMatchObject({ project_id: w.projectId, server_id: w.serverId, name: "qa", status: "pending", git_branch: "main", is_active: true });
      const again = await call({ method: "GET", path: `/environments/${res.body.id}` });
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: res.body });
    },
  },
  ...(["deploy", "restart", "start", "stop"] as const).map((a) => actionEndpoint(a, "")),
  ...(["deploy", "redeploy", "restart", "start", "stop"] as const).map((a) => actionEndpoint(a, "actions/")),
  {
    endpoint: "GET /environments/{id}/deployments",
    request: (w) => ({ method: "GET", path: `/environments/${w.env.history}/deployments` }),
    expected: READ_P,
    verify(res, { w }) {
      const { ids, total } = expectPage(res.body, expectTask);
      expect(ids).toEqual([w.tasks.history]);
      expect(total).toBe(1);
      expect(res.body.data[0]).toMatchObject({ type: "deploy", status: "queued", environment_id: w.env.history });
    },
  },
  {
    endpoint: "GET /deployments/{id}",
    request: (w) => ({ method: "GET", path: `/deployments/${w.tasks.history}` }),
    expected: READ_P,
    verify(res, { w }) {
      expectTask(res.body);
      expect(res.body).toMatchObject({ id: w.tasks.history, type: "deploy", status: "queued", environment_id: w.env.history, triggered_by: null });
    },
  },
  {
    endpoint: "GET /servers",
    request: () => ({ method: "GET", path: "/servers" }),
    expected: READ_ANY,
    verify(res, { w }) {
      const { ids, total } = expectPage(res.body, expectServer);
      expect(ids).toEqual([w.serverId]);
      expect(total).toBe(1);
      // P's three environments and Q's one.
      expect(res.body.data[0]).toMatchObject({ provider: "hetzner", region: "fsn1", cpu_cores: 4, ram_mb: 8192, disk_gb: 160, environment_count: 4 });
    },
  },
  {
    endpoint: "GET /servers/{id}",
    request: (w) => ({ method: "GET", path: `/servers/${w.serverId}` }),
    expected: READ_ANY,
    verify(res, { w }) {
      expectServer(res.body);
      expect(res.body).toMatchObject({ id: w.serverId, provider: "hetzner", region: "fsn1", cpu_cores: 4, ram_mb: 8192, disk_gb: 160 });
    },
  },
  {
    endpoint: "POST /webhooks",
    request: () => ({
      method: "POST",
      path: "/webhooks",
      body: { url: "https://hooks.example.com/new", events: ["deploy.completed", "environment.status_changed"], description: "created" },
    }),
    // A key of the other project subscribes within its own project.
    expected: row(ok(201), RO, ok(201), RO, ok(201), RO),
    async verify(res, { w, kind, call }) {
      expectWebhookWithSecret(res.body);
      expect(res.body).toMatchObject({
        url: "https://hooks.example.com/new",
        events: ["deploy.completed", "environment.status_changed"],
        description: "created",
        enabled: true,
        project_id: visible(kind, { org: [null], project: [w.projectId], other: [w.otherProjectId] })[0],
      });
      const again = await call({ method: "GET", path: `/webhooks/${res.body.id}` });
      expect(again.status).toBe(200);
      expectWebhook(again.body); // the secret is never shown again
    },
  },
  {
    endpoint: "GET /webhooks",
    request: () => ({ method: "GET", path: "/webhooks" }),
    expected: READ_ANY,
    verify(res, { w, kind }) {
      const { ids, total } = expectPage(res.body, expectWebhook);
      const want = visible(kind, {
        org: [w.webhooks.project, w.webhooks.other, w.webhooks.org],
        project: [w.webhooks.project],
        other: [w.webhooks.other],
      });
      expect(sorted(ids)).toEqual(sorted(want));
      expect(total).toBe(want.length);
    },
  },
  {
    endpoint: "GET /webhooks/{id}",
    request: (w) => ({ method: "GET", path: `/webhooks/${w.webhooks.project}` }),
    expected: READ_P,
    verify(res, { w }) {
      expectWebhook(res.body);
      expect(res.body).toMatchObject({ id: w.webhooks.project, url: "https://hooks.example.com/project", project_id: w.projectId, events: ["deployment.completed"] });
    },
  },
  {
    endpoint: "PATCH /webhooks/{id}",
    request: (w) => ({ method: "PATCH", path: `/webhooks/${w.webhooks.project}`, body: { description: "patched", enabled: false } }),
    expected: WRITE_P(200),
    async verify(res, { w, callAs }) {
      expectWebhook(res.body);
      expect(res.body).toMatchObject({ id: w.webhooks.project, url: "https://hooks.example.com/project", description: "patched", enabled: false });
      const again = await callAs("org_ro", { method: "GET", path: `/webhooks/${w.webhooks.project}` });
      expect(again.body).toMatchObject({ description: "patched", enabled: false });
    },
  },
  {
    endpoint: "DELETE /webhooks/{id}",
    request: (w) => ({ method: "DELETE", path: `/webhooks/${w.webhooks.project}` }),
    expected: WRITE_P(204),
    async verify(res, { w, callAs }) {
      expect(res.body).toBe("");
      expectError(await callAs("org_ro", { method: "GET", path: `/webhooks/${w.webhooks.project}` }), 404, "not_found");
      const list = await callAs("org_ro", { method: "GET", path: "/webhooks" });
      expect(sorted(list.body.data.map((h: { id: string }) => h.id))).toEqual(sorted([w.webhooks.other, w.webhooks.org]));
    },
  },
  {
    endpoint: "GET /api-keys",
    request: () => ({ method: "GET", path: "/api-keys?limit=100" }),
    expected: READ_ANY,
    verify(res, { w, kind }) {
      const { ids, total } = expectPage(res.body, expectApiKey);
      const k = w.keyIds;
      const want = visible(kind, {
        org: [k.org_rw, k.org_ro, k.project_rw, k.project_ro, k.other_rw, k.other_ro, k.victim],
        project: [k.project_rw, k.project_ro, k.victim],
        other: [k.other_rw, k.other_ro],
      });
      expect(sorted(ids)).toEqual(sorted(want));
      expect(total).toBe(want.length);
    },
  },
  {
    endpoint: "GET /api-keys/{id}",
    request: (w) => ({ method: "GET", path: `/api-keys/${w.keyIds.victim}` }),
    expected: READ_P,
    verify(res, { w }) {
      expectApiKey(res.body);
      expect(res.body).toEqual(
        expect.objectContaining({
          id: w.keyIds.victim,
          name: "victim",
          access: "read_only",
          scope: "project",
          project_id: w.projectId,
          prefix: w.victimKey.slice(0, 16),
          revoked_at: null,
        }),
      );
    },
  },
  {
    // Revoking answers 200 with the revoked key (documented in the OpenAPI description).
    endpoint: "DELETE /api-keys/{id}",
    request: (w) => ({ method: "DELETE", path: `/api-keys/${w.keyIds.victim}` }),
    expected: WRITE_P(200),
    async verify(res, { w }) {
      expectApiKey(res.body);
      expect(res.body.id).toBe(w.keyIds.victim);
      expect(res.body.revoked_at).toEqual(expect.any(String));
      const refused = await send(cp, bearer(w.victimKey), { method: "GET", path: "/projects" });
      expectError(refused, 401, "api_key_revoked");
    },
  },
];

function label(o: Outcome): string {
  return o.error ? `${o.status} ${o.error}` : String(o.status);
}

function context(w: World, kind: KeyKind): Ctx {
  return {
    w,
    kind,
    call: (req) => send(cp, bearer(w.keys[kind]), req),
    callAs: (other, req) => send(cp, bearer(w.keys[other]), req),
  };
}

describe("every endpoint x every key kind", () => {
  const cases = ENDPOINTS.flatMap((e) => KEY_KINDS.map((kind) => ({ e, kind, label: `${e.endpoint} with ${kind} -> ${label(e.expected[kind])}` })));

  it("covers every public endpoint of the brief", () => {
    expect(new Set(ENDPOINTS.map((e) => e.endpoint)).size).toBe(29);
  });

  it.each(named(cases))("%s", async (_name, { e, kind }) => {
    const w = await buildWorld(cp);
    const expected = e.expected[kind];
    const req = e.request(w, kind);
    const before = await snapshot(cp, w.organizationId);
    const res = await send(cp, bearer(w.keys[kind]), req);
    if (expected.error) {
      expectError(res, expected.status, expected.error);
      expect(await snapshot(cp, w.organizationId)).toEqual(before);
      return;
    }
    expect(res.status, JSON.stringify(res.body)).toBe(expected.status);
    if (req.method === "GET") expect(await snapshot(cp, w.organizationId)).toEqual(before);
    await e.verify(res, context(w, kind));
  });
});

interface Extra {
  label: string;
  kind: KeyKind;
  request(w: World): RequestSpec;
  expected: Outcome;
  after?(ctx: Ctx): Promise<void>;
}

// The same rules at their edges: resources of the organisation that a project key must not
// reach, and permission checks that come before body, header and state checks.
const EXTRAS: Extra[] = [
  {
    label: "GET /webhooks/{id} of an organisation-wide webhook with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "GET", path: `/webhooks/${w.webhooks.org}` }),
    expected: NF,
  },
  {
    label: "PATCH /webhooks/{id} of an organisation-wide webhook with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "PATCH", path: `/webhooks/${w.webhooks.org}`, body: { enabled: false } }),
    expected: NF,
  },
  {
    label: "DELETE /webhooks/{id} of an organisation-wide webhook with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "DELETE", path: `/webhooks/${w.webhooks.org}` }),
    expected: NF,
  },
  {
    label: "POST /webhooks with project_id of another project, other_rw -> 404 not_found",
    kind: "other_rw",
    request: (w) => ({ method: "POST", path: "/webhooks", body: { url: "https://hooks.example.com/x", events: ["deploy.failed"], project_id: w.projectId } }),
    expected: NF,
  },
  {
    label: "GET /api-keys/{id} of an organisation key with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "GET", path: `/api-keys/${w.keyIds.org_ro}` }),
    expected: NF,
  },
  {
    label: "DELETE /api-keys/{id} of an organisation key with project_rw -> 404 not_found, the key keeps working",
    kind: "project_rw",
    request: (w) => ({ method: "DELETE", path: `/api-keys/${w.keyIds.org_ro}` }),
    expected: NF,
    async after({ callAs }) {
      expect((await callAs("org_ro", { method: "GET", path: "/projects" })).status).toBe(200);
    },
  },
  {
    label: "DELETE /api-keys/{id} of another project's key with project_rw -> 404 not_found, the key keeps working",
    kind: "project_rw",
    request: (w) => ({ method: "DELETE", path: `/api-keys/${w.keyIds.other_ro}` }),
    expected: NF,
    async after({ callAs }) {
      expect((await callAs("other_ro", { method: "GET", path: "/projects" })).status).toBe(200);
    },
  },
  {
    label: "GET /projects/{id}/environments of the other project with project_ro -> 404 not_found",
    kind: "project_ro",
    request: (w) => ({ method: "GET", path: `/projects/${w.otherProjectId}/environments` }),
    expected: NF,
  },
  {
    label: "GET /deployments/{id} of the other project's task with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "GET", path: `/deployments/${w.tasks.other}` }),
    expected: NF,
  },
  {
    label: "POST /environments/{id}/actions/stop on the other project's environment with project_rw -> 404 not_found",
    kind: "project_rw",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.other}/actions/stop` }),
    expected: NF,
  },
  {
    label: "DELETE /projects/{id} without X-Confirm-Delete with org_rw -> 400 confirm_required",
    kind: "org_rw",
    request: (w) => ({ method: "DELETE", path: `/projects/${w.idleProjectId}` }),
    expected: { status: 400, error: "confirm_required" },
  },
  {
    label: "DELETE /projects/{id} with X-Confirm-Delete: yes with org_rw -> 400 confirm_required",
    kind: "org_rw",
    request: (w) => ({ method: "DELETE", path: `/projects/${w.idleProjectId}`, headers: { "x-confirm-delete": "yes" } }),
    expected: { status: 400, error: "confirm_required" },
  },
  {
    label: "DELETE /projects/{id} of a project with a running environment with org_rw -> 409 environments_running",
    kind: "org_rw",
    request: (w) => ({ method: "DELETE", path: `/projects/${w.projectId}`, headers: { "x-confirm-delete": "true" } }),
    expected: { status: 409, error: "environments_running" },
  },
  {
    label: "DELETE /projects/{id} without X-Confirm-Delete with project_rw -> 403 project_scoped_key",
    kind: "project_rw",
    request: (w) => ({ method: "DELETE", path: `/projects/${w.projectId}` }),
    expected: PS,
  },
  {
    label: "POST /environments/{id}/deploy while a task is queued with project_rw -> 409 task_in_progress",
    kind: "project_rw",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.history}/deploy` }),
    expected: { status: 409, error: "task_in_progress" },
  },
  {
    label: "POST /environments/{id}/deploy while a task is queued with project_ro -> 403 read_only_key",
    kind: "project_ro",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.history}/deploy` }),
    expected: RO,
  },
  {
    label: "POST /environments/{id}/start on a running environment with org_rw -> 409 environment_not_stopped",
    kind: "org_rw",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.running}/start` }),
    expected: { status: 409, error: "environment_not_stopped" },
  },
  {
    label: "POST /environments/{id}/actions/stop on a stopped environment with org_rw -> 409 environment_not_running",
    kind: "org_rw",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.stopped}/actions/stop` }),
    expected: { status: 409, error: "environment_not_running" },
  },
  {
    label: "POST /environments/{id}/restart on a stopped environment with org_ro -> 403 read_only_key",
    kind: "org_ro",
    request: (w) => ({ method: "POST", path: `/environments/${w.env.stopped}/restart` }),
    expected: RO,
  },
  {
    label: "POST /projects with an invalid body and org_ro -> 403 read_only_key (the key is refused before the body is read)",
    kind: "org_ro",
    request: () => ({ method: "POST", path: "/projects", body: { name: "" } }),
    expected: RO,
  },
  {
    label: "POST /projects with an invalid body and project_rw -> 403 project_scoped_key",
    kind: "project_rw",
    request: () => ({ method: "POST", path: "/projects", body: {} }),
    expected: PS,
  },
  {
    label: "PATCH /projects/{id} with an invalid body and project_ro -> 403 read_only_key",
    kind: "project_ro",
    request: (w) => ({ method: "PATCH", path: `/projects/${w.projectId}`, body: { name: "" } }),
    expected: RO,
  },
  {
    label: "POST /environments/{id}/deploy with a malformed id and org_ro -> 403 read_only_key",
    kind: "org_ro",
    request: () => ({ method: "POST", path: "/environments/not-a-uuid/deploy" }),
    expected: RO,
  },
  {
    label: "POST /webhooks with an invalid body and org_ro -> 403 read_only_key",
    kind: "org_ro",
    request: () => ({ method: "POST", path: "/webhooks", body: { url: "https://hooks.example.com/x", events: [] } }),
    expected: RO,
  },
];

describe("edges of the access rules", () => {
  it.each(named(EXTRAS))("%s", async (_name, { kind, request, expected, after }) => {
    const w = await buildWorld(cp);
    const before = await snapshot(cp, w.organizationId);
    const res = await send(cp, bearer(w.keys[kind]), request(w));
    expectError(res, expected.status, expected.error!);
    expect(await snapshot(cp, w.organizationId)).toEqual(before);
    await after?.(context(w, kind));
  });
});

describe("authentication failures on every endpoint", () => {
  let w: World;
  let free: World;
  let revokedKey: string;
  beforeAll(async () => {
    w = await buildWorld(cp);
    free = await buildWorld(cp, { plan: "free" });
    const revoked = await cp.app.services.apiKeys.create({
      organizationId: w.organizationId,
      projectId: null,
      access: "full_access",
      name: "revoked",
      createdBy: null,
    });
    await cp.app.services.apiKeys.revoke({ organizationId: w.organizationId, projectId: null }, revoked.id);
    revokedKey = revoked.key;
  });

  const FAILURES = [
    { failure: "no Authorization header", status: 401, code: "authentication_required" },
    { failure: "a malformed Authorization header", status: 401, code: "invalid_authorization_header" },
    { failure: "an unknown key", status: 401, code: "invalid_api_key" },
    { failure: "a revoked key", status: 401, code: "api_key_revoked" },
    { failure: "a key of an organisation on the free plan", status: 403, code: "plan_upgrade_required" },
  ] as const;
  type Failure = (typeof FAILURES)[number]["failure"];

  function attempt(failure: Failure, e: Endpoint): { world: World; authorization: string | null; req: RequestSpec } {
    switch (failure) {
      case "no Authorization header":
        return { world: w, authorization: null, req: e.request(w, "org_rw") };
      case "a malformed Authorization header":
        return { world: w, authorization: `Token ${w.keys.org_rw}`, req: e.request(w, "org_rw") };
      case "an unknown key":
        return { world: w, authorization: bearer(unknownKey()), req: e.request(w, "org_rw") };
      case "a revoked key":
        return { world: w, authorization: bearer(revokedKey), req: e.request(w, "org_rw") };
      case "a key of an organisation on the free plan":
        return { world: free, authorization: bearer(free.keys.org_rw), req: e.request(free, "org_rw") };
    }
  }

  const cases = ENDPOINTS.flatMap((e) => FAILURES.map((f) => ({ e, ...f, label: `${e.endpoint} with ${f.failure} -> ${f.status} ${f.code}` })));

  it.each(named(cases))("%s", async (_name, { e, failure, status, code }) => {
    const { world, authorization, req } = attempt(failure, e);
    const before = await snapshot(cp, world.organizationId);
    const res = await send(cp, authorization, req);
    expectError(res, status, code);
    if (status === 401) expect(res.headers["www-authenticate"]).toBe('Bearer realm="berth"');
    expect(await snapshot(cp, world.organizationId)).toEqual(before);
  });

  const HEADERS = [
    { header: () => "Basic dXNlcjpwYXNzd29yZA==", code: "invalid_authorization_header" },
    { header: () => "Bearer", code: "invalid_authorization_header" },
    { header: () => `${w.keys.org_ro}`, code: "invalid_authorization_header" },
    { header: () => `Bearer ${w.keys.org_ro} ${w.keys.org_ro}`, code: "invalid_authorization_header" },
    { header: () => "Bearer not-an-api-key", code: "invalid_api_key" },
    { header: () => `Bearer ${w.keys.org_ro.slice(0, -1)}`, code: "invalid_api_key" },
    { header: () => `Bearer ${w.keys.org_ro.replace("svc_live_ro_", "svc_test_ro_")}`, code: "invalid_api_key" },
    { header: () => bearer(unknownKey("ro")), code: "invalid_api_key" },
  ];
  it.each(named(HEADERS.map((h, i) => ({ ...h, label: `GET /projects with Authorization variant #${i + 1} -> 401 ${h.code}` }))))(
    "%s",
    async (_name, { header, code }) => {
      const res = await send(cp, header(), { method: "GET", path: "/projects" });
      expectError(res, 401, code);
    },
  );

  it("accepts the Bearer scheme in any letter case", async () => {
    const res = await send(cp, `bearer ${w.keys.org_ro}`, { method: "GET", path: "/projects" });
    expect(res.status).toBe(200);
  });
});
