// Tenant isolation of the public API: organisation B's keys never read, change or learn
// about organisation A's resources. Every endpoint that takes an id is tried by each of B's
// four keys with A's id: the answer is the one B gets for an id that exists nowhere, and
// every row of A (and of B) is unchanged afterwards. Lists and cursors never carry A's items.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import type { Res } from "../support/http.ts";
import {
  bearer,
  buildWorld,
  expectError,
  expectPage,
  named,
  randomId,
  send,
  snapshot,
  taskCount,
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

const B_KINDS = ["org_rw", "org_ro", "project_rw", "project_ro"] as const;
type BKind = (typeof B_KINDS)[number];

interface Outcome {
  status: number;
  error: string;
}
const NF: Outcome = { status: 404, error: "not_found" };
/** Permission checks come first and do not depend on the id, so they reveal nothing about A. */
const RO: Outcome = { status: 403, error: "read_only_key" };
const PS: Outcome = { status: 403, error: "project_scoped_key" };
const SERVER_NOT_FOUND: Outcome = { status: 400, error: "server_not_found" };

// Columns: B's org_rw, org_ro, project_rw, project_ro.
const row = (...o: [Outcome, Outcome, Outcome, Outcome]): Record<BKind, Outcome> =>
  Object.fromEntries(B_KINDS.map((k, i) => [k, o[i]!])) as Record<BKind, Outcome>;
const READ = row(NF, NF, NF, NF);
const WRITE = row(NF, RO, NF, RO);

async function orgs(): Promise<{ a: World; b: World }> {
  const a = await buildWorld(cp, { name: "Organisation A" });
  const b = await buildWorld(cp, { name: "Organisation B" });
  return { a, b };
}

const asA = (a: World, req: RequestSpec) => send(cp, bearer(a.keys.org_ro), req);

interface Targeted {
  endpoint: string;
  /** A's id that B's request names. */
  target(a: World): string;
  request(id: string): RequestSpec;
  expected: Record<BKind, Outcome>;
  /** A's data, read through A's own key, is as it was. */
  intact?(a: World): Promise<void>;
}

const ACTION_TARGET = { deploy: "running", redeploy: "running", restart: "running", stop: "running", start: "stopped" } as const;
type Action = keyof typeof ACTION_TARGET;

function action(name: Action, segment: "" | "actions/"): Targeted {
  const envKind = ACTION_TARGET[name];
  return {
    endpoint: `POST /environments/{id}/${segment}${name}`,
    target: (a) => a.env[envKind],
    request: (id) => ({ method: "POST", path: `/environments/${id}/${segment}${name}` }),
    expected: WRITE,
    async intact(a) {
      expect(await taskCount(cp, a.env[envKind])).toBe(0);
      const env = await asA(a, { method: "GET", path: `/environments/${a.env[envKind]}` });
      expect(env.body.status).toBe(envKind);
      const history = await asA(a, { method: "GET", path: `/environments/${a.env[envKind]}/deployments` });
      expect(history.body.pagination.total).toBe(0);
    },
  };
}

const TARGETED: Targeted[] = [
  {
    endpoint: "GET /projects/{id}",
    target: (a) => a.projectId,
    request: (id) => ({ method: "GET", path: `/projects/${id}` }),
    expected: READ,
  },
  {
    endpoint: "PATCH /projects/{id}",
    target: (a) => a.projectId,
    request: (id) => ({ method: "PATCH", path: `/projects/${id}`, body: { name: "Hijacked", default_branch: "evil" } }),
    expected: WRITE,
    async intact(a) {
      const p = await asA(a, { method: "GET", path: `/projects/${a.projectId}` });
      expect(p.body).toMatchObject({ name: "Demo ERP", default_branch: "main" });
    },
  },
  {
    endpoint: "DELETE /projects/{id}",
    // A's project without environments: A itself could delete it.
    target: (a) => a.idleProjectId,
    request: (id) => ({ method: "DELETE", path: `/projects/${id}`, headers: { "x-confirm-delete": "true" } }),
    expected: row(NF, RO, PS, RO),
    async intact(a) {
      expect((await asA(a, { method: "GET", path: `/projects/${a.idleProjectId}` })).status).toBe(200);
    },
  },
  {
    endpoint: "GET /projects/{id}/environments",
    target: (a) => a.projectId,
    request: (id) => ({ method: "GET", path: `/projects/${id}/environments` }),
    expected: READ,
  },
  {
    endpoint: "GET /environments/{id}",
    target: (a) => a.env.running,
    request: (id) => ({ method: "GET", path: `/environments/${id}` }),
    expected: READ,
  },
  ...(["deploy", "restart", "start", "stop"] as const).map((n) => action(n, "")),
  ...(["deploy", "redeploy", "restart", "start", "stop"] as const).map((n) => action(n, "actions/")),
  {
    endpoint: "GET /environments/{id}/deployments",
    target: (a) => a.env.history,
    request: (id) => ({ method: "GET", path: `/environments/${id}/deployments` }),
    expected: READ,
  },
  {
    endpoint: "GET /deployments/{id}",
    target: (a) => a.tasks.history,
    request: (id) => ({ method: "GET", path: `/deployments/${id}` }),
    expected: READ,
  },
  {
    endpoint: "GET /servers/{id}",
    target: (a) => a.serverId,
    request: (id) => ({ method: "GET", path: `/servers/${id}` }),
    expected: READ,
  },
  {
    endpoint: "GET /webhooks/{id}",
    target: (a) => a.webhooks.project,
    request: (id) => ({ method: "GET", path: `/webhooks/${id}` }),
    expected: READ,
  },
  {
    endpoint: "PATCH /webhooks/{id}",
    target: (a) => a.webhooks.org,
    request: (id) => ({ method: "PATCH", path: `/webhooks/${id}`, body: { url: "https://attacker.example.net/steal", enabled: false } }),
    expected: WRITE,
    async intact(a) {
      const h = await asA(a, { method: "GET", path: `/webhooks/${a.webhooks.org}` });
      expect(h.body).toMatchObject({ url: "https://hooks.example.com/org", enabled: true });
    },
  },
  {
    endpoint: "DELETE /webhooks/{id}",
    target: (a) => a.webhooks.project,
    request: (id) => ({ method: "DELETE", path: `/webhooks/${id}` }),
    expected: WRITE,
    async intact(a) {
      expect((await asA(a, { method: "GET", path: `/webhooks/${a.webhooks.project}` })).status).toBe(200);
    },
  },
  {
    endpoint: "GET /api-keys/{id}",
    target: (a) => a.keyIds.org_rw,
    request: (id) => ({ method: "GET", path: `/api-keys/${id}` }),
    expected: READ,
  },
  {
    endpoint: "DELETE /api-keys/{id}",
    target: (a) => a.keyIds.org_rw,
    request: (id) => ({ method: "DELETE", path: `/api-keys/${id}` }),
    expected: WRITE,
    async intact(a) {
      const res = await send(cp, bearer(a.keys.org_rw), { method: "GET", path: "/projects" });
      expect(res.status).toBe(200);
      const key = await asA(a, { method: "GET", path: `/api-keys/${a.keyIds.org_rw}` });
      expect(key.body.revoked_at).toBeNull();
    },
  },
  // Ids in the body.
  {
    endpoint: "POST /projects with A's server_id",
    target: (a) => a.serverId,
    request: (id) => ({ method: "POST", path: "/projects", body: { name: "Intruder", server_id: id } }),
    expected: row(SERVER_NOT_FOUND, RO, PS, RO),
  },
  {
    endpoint: "POST /environments with A's project_id",
    target: (a) => a.projectId,
    request: (id) => ({ method: "POST", path: "/environments", body: { project_id: id, name: "intruder" } }),
    expected: WRITE,
    async intact(a) {
      const envs = await asA(a, { method: "GET", path: `/projects/${a.projectId}/environments` });
      expect(envs.body.pagination.total).toBe(3);
    },
  },
  {
    endpoint: "POST /webhooks with A's project_id",
    target: (a) => a.projectId,
    request: (id) => ({
      method: "POST",
      path: "/webhooks",
      body: { url: "https://attacker.example.net/hook", events: ["deployment.completed"], project_id: id },
    }),
    expected: WRITE,
  },
];

describe("B's keys on A's ids", () => {
  const cases = TARGETED.flatMap((t) =>
    B_KINDS.map((kind) => ({ t, kind, label: `${t.endpoint} by B's ${kind} -> ${t.expected[kind].status} ${t.expected[kind].error}` })),
  );

  it.each(named(cases))("%s", async (_name, { t, kind }) => {
    const { a, b } = await orgs();
    const beforeA = await snapshot(cp, a.organizationId);
    const beforeB = await snapshot(cp, b.organizationId);
    const expected = t.expected[kind];

    const res = await send(cp, bearer(b.keys[kind]), t.request(t.target(a)));
    expectError(res, expected.status, expected.error);
    // Exactly what B gets for an id that exists nowhere: no existence oracle.
    const nowhere = await send(cp, bearer(b.keys[kind]), t.request(randomId()));
    expect({ status: res.status, error: res.body.error, message: res.body.message }).toEqual({
      status: nowhere.status,
      error: nowhere.body.error,
      message: nowhere.body.message,
    });

    expect(await snapshot(cp, a.organizationId)).toEqual(beforeA);
    expect(await snapshot(cp, b.organizationId)).toEqual(beforeB);
    await t.intact?.(a);
  });
});

/** Every id of an organisation's resources, to prove none leaks into another's lists. */
function allIds(w: World): Set<string> {
  return new Set([
    w.organizationId,
    w.serverId,
    w.projectId,
    w.otherProjectId,
    w.idleProjectId,
    ...Object.values(w.env),
    ...Object.values(w.tasks),
    ...Object.values(w.webhooks),
    ...Object.values(w.keyIds),
  ]);
}

interface ListCase {
  list: string;
  path(b: World): string;
  /** What B's key of this kind must see, exactly. */
  want(b: World, kind: BKind): string[];
}

const byScope = (kind: BKind, org: string[], project: string[]) => (kind.startsWith("org_") ? org : project);

const LISTS: ListCase[] = [
  {
    list: "GET /projects",
    path: () => "/projects?limit=100",
    want: (b, k) => byScope(k, [b.projectId, b.otherProjectId, b.idleProjectId], [b.projectId]),
  },
  { list: "GET /servers", path: () => "/servers?limit=100", want: (b) => [b.serverId] },
  {
    list: "GET /webhooks",
    path: () => "/webhooks?limit=100",
    want: (b, k) => byScope(k, [b.webhooks.project, b.webhooks.other, b.webhooks.org], [b.webhooks.project]),
  },
  {
    list: "GET /api-keys",
    path: () => "/api-keys?limit=100",
    want: (b, k) =>
      byScope(k, Object.values(b.keyIds), [b.keyIds.project_rw, b.keyIds.project_ro, b.keyIds.victim]),
  },
  {
    list: "GET /projects/{id}/environments",
    path: (b) => `/projects/${b.projectId}/environments?limit=100`,
    want: (b) => [b.env.running, b.env.stopped, b.env.history],
  },
  {
    list: "GET /environments/{id}/deployments",
    path: (b) => `/environments/${b.env.history}/deployments?limit=100`,
    want: (b) => [b.tasks.history],
  },
];

const sorted = (ids: string[]) => [...ids].sort();

describe("B's lists never contain A's items", () => {
  const cases = LISTS.flatMap((l) => B_KINDS.map((kind) => ({ l, kind, label: `${l.list} by B's ${kind} lists exactly B's items` })));

  it.each(named(cases))("%s", async (_name, { l, kind }) => {
    const { a, b } = await orgs();
    const res = await send(cp, bearer(b.keys[kind]), { method: "GET", path: l.path(b) });
    expect(res.status).toBe(200);
    const { ids, total } = expectPage(res.body, () => {});
    const fromA = allIds(a);
    expect(ids.filter((id) => fromA.has(id))).toEqual([]);
    expect(sorted(ids)).toEqual(sorted(l.want(b, kind)));
    expect(total).toBe(l.want(b, kind).length);
  });
});

interface CursorCase {
  list: string;
  /** Adds one item to A (newer than everything of B) and returns the path of A's list. */
  grow(a: World): Promise<string>;
  /** B's own list to send A's cursor to, and every id B may legitimately see there. */
  bPath(b: World): string;
  bIds(b: World): string[];
}

const CURSOR_CASES: CursorCase[] = [
  {
    list: "GET /projects",
    async grow(a) {
      await cp.app.services.projects.create({ organizationId: a.organizationId, projectId: null }, { name: "A newest", server_id: a.serverId });
      return "/projects";
    },
    bPath: () => "/projects",
    bIds: (b) => [b.projectId, b.otherProjectId, b.idleProjectId],
  },
  {
    list: "GET /servers",
    async grow(a) {
      await cp.database.pool.query("insert into servers (organization_id, name) values ($1, 'A second server')", [a.organizationId]);
      return "/servers";
    },
    bPath: () => "/servers",
    bIds: (b) => [b.serverId],
  },
  {
    list: "GET /webhooks",
    async grow(a) {
      await cp.app.services.webhooks.create(
        { organizationId: a.organizationId, projectId: null },
        { url: "https://hooks.example.com/a-newest", events: ["deploy.failed"] },
      );
      return "/webhooks";
    },
    bPath: () => "/webhooks",
    bIds: (b) => Object.values(b.webhooks),
  },
  {
    list: "GET /api-keys",
    async grow(a) {
      await cp.app.services.apiKeys.create({ organizationId: a.organizationId, projectId: null, access: "read_only", name: "A newest", createdBy: null });
      return "/api-keys";
    },
    bPath: () => "/api-keys",
    bIds: (b) => Object.values(b.keyIds),
  },
  {
    list: "GET /projects/{id}/environments",
    async grow(a) {
      await cp.app.services.environments.create({ organizationId: a.organizationId, projectId: null }, { project_id: a.projectId, name: "a-newest" });
      return `/projects/${a.projectId}/environments`;
    },
    bPath: (b) => `/projects/${b.projectId}/environments`,
    bIds: (b) => [b.env.running, b.env.stopped, b.env.history],
  },
  {
    list: "GET /environments/{id}/deployments",
    async grow(a) {
      await cp.database.pool.query("update deployments set status = 'success' where id = $1", [a.tasks.history]);
      await cp.app.services.deployments.requestAction({ organizationId: a.organizationId, projectId: null }, a.env.history, "deploy", {
        userId: null,
        apiKeyId: null,
      });
      return `/environments/${a.env.history}/deployments`;
    },
    bPath: (b) => `/environments/${b.env.history}/deployments`,
    bIds: (b) => [b.tasks.history],
  },
];

describe("A's pagination cursor used by B", () => {
  const cases = CURSOR_CASES.flatMap((c) =>
    (["org_ro", "project_ro"] as const).map((kind) => ({ c, kind, label: `${c.list}: A's cursor with B's ${kind} is refused or yields only B's items` })),
  );

  it.each(named(cases))("%s", async (_name, { c, kind }) => {
    const { a, b } = await orgs();
    const aPath = await c.grow(a);
    const first = await asA(a, { method: "GET", path: `${aPath}?limit=1` });
    expect(first.status).toBe(200);
    expect(first.body.pagination.has_more).toBe(true);
    const cursor = first.body.pagination.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));

    const res: Res = await send(cp, bearer(b.keys[kind]), { method: "GET", path: `${c.bPath(b)}?limit=100&cursor=${encodeURIComponent(cursor)}` });
    if (res.status === 400) {
      expectError(res, 400, "invalid_cursor");
    } else {
      expect(res.status).toBe(200);
      const { ids } = expectPage(res.body, () => {});
      const fromA = allIds(a);
      const mine = new Set(c.bIds(b));
      expect(ids.filter((id) => fromA.has(id) || !mine.has(id))).toEqual([]);
    }
  });

  it.each(named(CURSOR_CASES.filter((c) => c.list.includes("{id}")).map((c) => ({ ...c, label: `${c.list}: B's org_ro sending A's cursor to A's own list -> 404 not_found` }))))(
    "%s",
    async (_name, c) => {
      const { a, b } = await orgs();
      const aPath = await c.grow(a);
      const first = await asA(a, { method: "GET", path: `${aPath}?limit=1` });
      const cursor = first.body.pagination.next_cursor as string;
      const res = await send(cp, bearer(b.keys.org_ro), { method: "GET", path: `${aPath}?limit=100&cursor=${encodeURIComponent(cursor)}` });
      expectError(res, 404, "not_found");
    },
  );
});

describe("idempotency keys do not cross organisations", () => {
  it("POST /projects: B reusing A's X-Idempotency-Key creates B's own project, not a replay of A's", async () => {
    const { a, b } = await orgs();
    const key = randomId();
    const headers = { "x-idempotency-key": key };
    const first = await send(cp, bearer(a.keys.org_rw), { method: "POST", path: "/projects", body: { name: "A project", server_id: a.serverId }, headers });
    expect(first.status).toBe(201);

    const res = await send(cp, bearer(b.keys.org_rw), { method: "POST", path: "/projects", body: { name: "B project", server_id: b.serverId }, headers });
    expect(res.status).toBe(201);
    expect(res.headers["x-idempotency-replayed"]).toBeUndefined();
    expect(res.body).toMatchObject({ name: "B project", server_id: b.serverId });
    expect(res.body.id).not.toBe(first.body.id);
    const bList = await send(cp, bearer(b.keys.org_ro), { method: "GET", path: "/projects?limit=100" });
    expect(bList.body.data.map((p: { id: string }) => p.id)).toContain(res.body.id);
    expect(bList.body.data.map((p: { id: string }) => p.id)).not.toContain(first.body.id);
  });

  it("POST /environments/{id}/actions/deploy: B reusing A's Idempotency-Key acts on B's environment only", async () => {
    const { a, b } = await orgs();
    const headers = { "idempotency-key": randomId() };
    const first = await send(cp, bearer(a.keys.org_rw), { method: "POST", path: `/environments/${a.env.running}/actions/deploy`, headers });
    expect(first.status).toBe(202);

    const res = await send(cp, bearer(b.keys.org_rw), { method: "POST", path: `/environments/${b.env.running}/actions/deploy`, headers });
    expect(res.status).toBe(202);
    expect(res.headers["x-idempotency-replayed"]).toBeUndefined();
    expect(res.body.environment_id).toBe(b.env.running);
    expect(res.body.task_id).not.toBe(first.body.task_id);
    expect(await taskCount(cp, b.env.running)).toBe(1);
    expect(await taskCount(cp, a.env.running)).toBe(1);
  });

  it("POST /environments/{id}/actions/deploy on A's environment with A's Idempotency-Key by B -> 404 not_found, not A's cached 202", async () => {
    const { a, b } = await orgs();
    const headers = { "idempotency-key": randomId() };
    const path = `/environments/${a.env.running}/actions/deploy`;
    const first = await send(cp, bearer(a.keys.org_rw), { method: "POST", path, headers });
    expect(first.status).toBe(202);
    const beforeA = await snapshot(cp, a.organizationId);

    const res = await send(cp, bearer(b.keys.org_rw), { method: "POST", path, headers });
    expectError(res, 404, "not_found");
    expect(res.headers["x-idempotency-replayed"]).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain(first.body.task_id);
    expect(await snapshot(cp, a.organizationId)).toEqual(beforeA);
  });
});
