// Outgoing webhooks end to end: deployment and environment status changes become signed
// POSTs to a local HTTP receiver, failed tries are retried and finally marked failed,
// deliveries are listed and re-sent through the public API, and two replicas on one
// database deliver each event once. Retry delays are shortened through the app's jobs
// option (retries at once; the production policy is checked in sweep.test.ts).
// The receiver listens on loopback, which outgoing requests may reach only because the
// replicas put it on their allow-list (BERTH_OUTBOUND_ALLOW; see webhook-ssrf.test.ts).
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDb, type DbHandle } from "@berth/db";
import { buildApp, createDemoOrganization, type App, type DemoOrganization } from "@berth/control-plane";
import { deadLetterOf } from "../../apps/control-plane/src/db/jobs.ts";
import { DELIVERY_QUEUE } from "../../apps/control-plane/src/modules/webhooks/webhook-sender.ts";
import { TEST_MASTER_KEY } from "../support/control-plane.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { publicClient } from "../support/http.ts";
import { waitFor } from "../support/wait.ts";

const JOBS = { retryDelaySeconds: 0, pollingIntervalSeconds: 0.5 };

interface Replica {
  app: App;
  database: DbHandle;
}
async function startReplica(url: string): Promise<Replica> {
  const database = createDb(url);
  const app = await buildApp({ database, masterKey: TEST_MASTER_KEY, jobs: JOBS, outboundAllow: ["127.0.0.1"], baseDomain: null });
  return { app, database };
}

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local receiver: answers each path with the next status of its script (the last one repeats). */
function receiver() {
  const received: Received[] = [];
  const scripts = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const script = scripts.get(path) ?? [200];
      const status = script.length > 1 ? script.shift()! : script[0]!;
      res.writeHead(status, { "content-type": "text/plain" });
      res.end(status >= 300 ? "x".repeat(5000) : "ok");
    });
  });
  return {
    received,
    script: (path: string, statuses: number[]) => scripts.set(path, [...statuses]),
    at: (path: string) => received.filter((r) => r.path === path),
    async start() {
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const addr = server.address();
      if (!addr || typeof addr === "string") throw new Error("no port");
      return `http://127.0.0.1:${addr.port}`;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

let testDb: TestDatabase;
let a: Replica;
let b: Replica;
let demo: DemoOrganization;
const hooks = receiver();
let hookBase: string;

beforeAll(async () => {
  testDb = await createTestDatabase();
  a = await startReplica(testDb.url);
  b = await startReplica(testDb.url); // a second replica: every event must still be delivered once
  demo = await createDemoOrganization(a.database.db, a.app.services);
  hookBase = await hooks.start();
});
afterAll(async () => {
  for (const r of [a, b]) {
    await r?.app.close();
    await r?.database.close();
  }
  await hooks.close();
  await testDb?.drop();
});

/** A fresh full-access key per write, so the tests stay under the per-key rate limit. */
async function rw() {
  const { key } = await a.app.services.apiKeys.create({ organizationId: demo.organization_id, projectId: null, access: "full_access", name: "t", createdBy: null });
  return publicClient(a.app, key);
}
const ro = () => publicClient(b.app, demo.api_keys.org_ro); // reads go to the other replica

async function subscribe(path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await (await rw()).post("/webhooks", { url: `${hookBase}${path}`, events, ...extra });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

/** A deploy of the running environment that ends with `status` (as the agent's events would set it). */
async function finishedDeploy(status: "success" | "failed", environmentId = demo.environments.running): Promise<string> {
  const row = await a.app.services.deployments.requestAction({ organizationId: demo.organization_id, projectId: null }, environmentId, "deploy", { userId: null, apiKeyId: null });
  await a.database.pool.query("update deployments set status = $2, completed_at = now(), error_message = $3 where id = $1", [row.id, status, status === "failed" ? "Image pull failed" : null]);
  return row.id;
}

function verifySignature(r: Received, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers["berth-signature"]));
  if (!m) return false;
  const expected = createHmac("sha256", secret).update(`${m[1]}.${r.body}`).digest();
  const fresh = Math.abs(Date.now() / 1000 - Number(m[1])) < 300;
  return fresh && timingSafeEqual(Buffer.from(m[2]!, "hex"), expected);
}

/** Polling reads the table (the API's read limit is 120 a minute); assertions use the API. */
async function stored(subscriptionId: string): Promise<{ status: string }[]> {
  const { rows } = await a.database.pool.query("select status from webhook_deliveries where subscription_id = $1 order by created_at desc, id desc", [subscriptionId]);
  return rows;
}

async function deliveries(subscriptionId: string) {
  const res = await ro().get(`/webhooks/${subscriptionId}/deliveries?limit=100`);
  expect(res.status).toBe(200);
  return res.body as { data: Record<string, unknown>[]; pagination: { total: number } };
}

describe("outgoing webhooks", () => {
  test("a finished deployment is POSTed once, signed, to the subscription; both spellings when both are subscribed", async () => {
    const sub = await subscribe("/ok", ["deploy.completed", "deployment.completed"]);
    const deploymentId = await finishedDeploy("success");
    await waitFor(async () => hooks.at("/ok").length >= 2, 10_000);

    const got = hooks.at("/ok");
    expect(got.map((r) => r.headers["berth-event"]).sort()).toEqual(["deploy.completed", "deployment.completed"]);
    const { rows: env } = await a.database.pool.query<{ domain: string }>("select domain from environments where id = $1", [demo.environments.running]);
    for (const r of got) {
      expect(verifySignature(r, sub.secret)).toBe(true);
      expect(verifySignature(r, "whsec_wrong")).toBe(false);
      expect(r.headers["content-type"]).toBe("application/json");
      const body = JSON.parse(r.body);
      expect(body).toMatchObject({ type: r.headers["berth-event"], organization_id: demo.organization_id });
      expect(body.data.deployment).toMatchObject({ id: deploymentId, environment_id: demo.environments.running, kind: "deploy", status: "success", environment_url: `https://${env[0]!.domain}` });
    }

    // The receiver has both POSTs; each delivery is recorded once its answer is read, a moment later.
    await waitFor(async () => (await deliveries(sub.id)).data.filter((d) => d.status === "succeeded").length === 2, 10_000);
    const list = await deliveries(sub.id);
    expect(list.pagination.total).toBe(2);
    for (const d of list.data) {
      expect(d).toMatchObject({ subscription_id: sub.id, status: "succeeded", attempts: 1, response_status: 200, response_body: "ok", error: null });
      expect(got.map((r) => r.headers["berth-delivery"])).toContain(d.id);
    }
    // Two replicas were listening: still exactly one POST per delivery.
    await new Promise((r) => setTimeout(r, 1000));
    expect(hooks.at("/ok")).toHaveLength(2);
  });

  test("environment status changes are delivered; project scope, disabled and deleted subscriptions are respected", async () => {
    const all = await subscribe("/env", ["environment.status_changed"]);
    const mine = await subscribe("/env-project", ["environment.status_changed"], { project_id: demo.project_id });
    const other = await a.app.services.projects.create({ organizationId: demo.organization_id, projectId: null }, { name: "Other", server_id: demo.server_id });
    const otherProject = await subscribe("/env-other-project", ["environment.status_changed"], { project_id: other.id });
    const off = await subscribe("/env-disabled", ["environment.status_changed"], { enabled: false });
    const gone = await subscribe("/env-deleted", ["environment.status_changed"]);
    const deployOnly = await subscribe("/env-deploy-only", ["deploy.failed"]);
    expect((await (await rw()).delete(`/webhooks/${gone.id}`)).status).toBe(204);

    await a.database.pool.query("update environments set status = 'error' where id = $1", [demo.environments.stopped]);
    await waitFor(async () => hooks.at("/env").length >= 1 && hooks.at("/env-project").length >= 1, 10_000);
    const body = JSON.parse(hooks.at("/env")[0]!.body);
    // No domain and no base domain on these replicas: no URL.
    expect(body).toMatchObject({ type: "environment.status_changed", data: { environment: { id: demo.environments.stopped, status: "error", previous_status: "stopped", url: null } } });
    expect(verifySignature(hooks.at("/env-project")[0]!, mine.secret)).toBe(true);
    // One fan-out transaction wrote the deliveries of every subscription for this event: the others got none.
    for (const sub of [otherProject, off, gone, deployOnly]) expect(await stored(sub.id)).toEqual([]);
    await new Promise((r) => setTimeout(r, 500));
    for (const path of ["/env-other-project", "/env-disabled", "/env-deleted", "/env-deploy-only"]) expect(hooks.at(path)).toEqual([]);
    expect((await deliveries(all.id)).pagination.total).toBe(1);
  });

  test("a receiver that fails once is tried again and the delivery succeeds", async () => {
    hooks.script("/flaky", [500, 200]);
    const sub = await subscribe("/flaky", ["deploy.failed"]);
    const deploymentId = await finishedDeploy("failed");
    await waitFor(async () => (await stored(sub.id))[0]?.status === "succeeded", 15_000, 200);

    const [d] = (await deliveries(sub.id)).data;
    expect(d).toMatchObject({ event_type: "deploy.failed", status: "succeeded", attempts: 2, response_status: 200, error: null });
    const tries = hooks.at("/flaky");
    expect(tries).toHaveLength(2);
    expect(new Set(tries.map((r) => r.headers["berth-delivery"]))).toEqual(new Set([d!.id]));
    expect(JSON.parse(tries[1]!.body).data.deployment).toMatchObject({ id: deploymentId, status: "failed", error_message: "Image pull failed" });
  });

  test("a receiver that always fails ends failed after the last try (dead-lettered), and can be re-sent through the API", async () => {
    hooks.script("/down", [500]);
    const sub = await subscribe("/down", ["deployment.failed"]);
    await finishedDeploy("failed");
    await waitFor(async () => (await stored(sub.id))[0]?.status === "failed", 20_000, 200);

    const [d] = (await deliveries(sub.id)).data;
    expect(d).toMatchObject({ status: "failed", attempts: 4, response_status: 500, error: "The receiver answered HTTP 500" });
    expect(String(d!.response_body)).toHaveLength(2048); // truncated
    expect(d!.last_attempt_at).toEqual(expect.any(String));
    expect(hooks.at("/down")).toHaveLength(4); // the first try and 3 retries
    // The delivery row says failed from inside the last try; pg-boss moves the job to the
    // dead-letter queue when that try's error reaches it, a moment later.
    await waitFor(async () => (await a.app.jobs.queueSize(deadLetterOf(DELIVERY_QUEUE))) >= 1, 10_000, 100);

    // Re-send: a read-only key may not; a delivery of another subscription is not found.
    expect((await ro().post(`/webhooks/${sub.id}/deliveries/${d!.id}/redeliver`)).status).toBe(403);
    const otherSub = await subscribe("/unused", ["deploy.failed"]);
    expect((await (await rw()).post(`/webhooks/${otherSub.id}/deliveries/${d!.id}/redeliver`)).status).toBe(404);
    expect((await (await rw()).post(`/webhooks/${sub.id}/deliveries/${randomUUID()}/redeliver`)).status).toBe(404);

    hooks.script("/down", [200]);
    const again = await (await rw()).post(`/webhooks/${sub.id}/deliveries/${d!.id}/redeliver`);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ id: d!.id, status: "pending" });
    await waitFor(async () => (await stored(sub.id))[0]?.status === "succeeded", 10_000, 200);
    expect((await deliveries(sub.id)).data[0]).toMatchObject({ attempts: 5, response_status: 200, error: null });
    const last = hooks.at("/down").at(-1)!;
    expect(last.headers["berth-delivery"]).toBe(d!.id);
    expect(verifySignature(last, sub.secret)).toBe(true);
  });

  test("deliveries are paginated, visible only within the key's scope, and documented in the OpenAPI document", async () => {
    const sub = await subscribe("/many", ["environment.status_changed"]);
    for (const status of ["stopped", "error", "running"]) {
      await a.database.pool.query("update environments set status = $2 where id = $1", [demo.environments.running, status]);
    }
    await waitFor(async () => (await stored(sub.id)).length === 3, 10_000, 200);
    const page1 = await ro().get(`/webhooks/${sub.id}/deliveries?limit=2`);
    expect(page1.body.data).toHaveLength(2);
    expect(page1.body.pagination).toMatchObject({ has_more: true, total: 3 });
    const page2 = await ro().get(`/webhooks/${sub.id}/deliveries?limit=2&cursor=${encodeURIComponent(page1.body.pagination.next_cursor)}`);
    expect(page2.body.data).toHaveLength(1);
    expect(new Set([...page1.body.data, ...page2.body.data].map((d: { id: string }) => d.id)).size).toBe(3);

    // A key of another organisation sees no such subscription.
    const stranger = await createDemoOrganization(a.database.db, a.app.services);
    expect((await publicClient(a.app, stranger.api_keys.org_ro).get(`/webhooks/${sub.id}/deliveries`)).status).toBe(404);

    const doc = await a.app.inject({ method: "GET", url: "/api/public/v1/openapi.json" });
    const paths = JSON.parse(doc.body).paths;
    expect(paths["/webhooks/{id}/deliveries"].get.description).toContain("Berth-Signature: t=<unix seconds>,v1=");
    expect(paths["/webhooks/{id}/deliveries/{delivery_id}/redeliver"].post.responses).toHaveProperty("202");
  });
});
