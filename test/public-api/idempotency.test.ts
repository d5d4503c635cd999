// Idempotency keys, public spec 4.4 rules 1-7.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { waitFor } from "../support/wait.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

const demo = () => createDemoOrganization(cp.database.db, cp.app.services);
const key = () => crypto.randomUUID();

async function projectCount(orgId: string): Promise<number> {
  const { rows } = await cp.database.pool.query("select count(*)::int as n from projects where organization_id = $1", [orgId]);
  return rows[0].n;
}

describe("a replayed key returns the first response and takes no action", () => {
  let d: DemoOrganization;
  beforeAll(async () => {
    d = await demo();
  });

  it("POST /projects: 201 replayed as 201 with X-Idempotency-Replayed, one project made", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const k = key();
    const before = await projectCount(d.organization_id);
    const first = await api.post("/projects", { name: "Idem", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(first.status).toBe(201);
    expect(first.headers["x-idempotency-replayed"]).toBeUndefined();
    const again = await api.post("/projects", { name: "Idem", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(again.status).toBe(201);
    expect(again.headers["x-idempotency-replayed"]).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await projectCount(d.organization_id)).toBe(before + 1);
  });

  it("action endpoints accept Idempotency-Key and X-Idempotency-Key and replay 202", async () => {
    for (const header of ["idempotency-key", "x-idempotency-key"]) {
      const org = await demo();
      const api = publicClient(cp.app, org.api_keys.org_rw);
      const k = key();
      const first = await api.post(`/environments/${org.environments.running}/actions/deploy`, undefined, { [header]: k });
      expect(first.status).toBe(202);
      const again = await api.post(`/environments/${org.environments.running}/actions/deploy`, undefined, { [header]: k });
      expect(again.status).toBe(202);
      expect(again.body.task_id).toBe(first.body.task_id);
      expect(again.headers["x-idempotency-replayed"]).toBe("true");
      // Without the key, the same call is a new request and meets the running task.
      const fresh = await api.post(`/environments/${org.environments.running}/actions/deploy`);
      expect(fresh.status).toBe(409);
      expect(fresh.body.error).toBe("task_in_progress");
    }
  });

  it("a cached error is replayed with its original status", async () => {
    const org = await demo();
    const api = publicClient(cp.app, org.api_keys.org_rw);
    const k = key();
    const first = await api.post(`/environments/${org.environments.stopped}/restart`, undefined, { "idempotency-key": k });
    expect(first.status).toBe(409);
    expect(first.body.error).toBe("environment_not_running");
    const again = await api.post(`/environments/${org.environments.stopped}/restart`, undefined, { "idempotency-key": k });
    expect(again.status).toBe(409);
    expect(again.body).toEqual(first.body);
  });

  it("reusing a key for a different operation returns the first operation's result", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const k = key();
    const project = await api.post("/projects", { name: "First op", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(project.status).toBe(201);
    const other = await api.post("/environments", { project_id: project.body.id, name: "never-made" }, { "x-idempotency-key": k });
    expect(other.status).toBe(201);
    expect(other.body).toEqual(project.body);
    const envs = await publicClient(cp.app, d.api_keys.org_ro).get(`/projects/${project.body.id}/environments`);
    expect(envs.body.pagination.total).toBe(0);
  });

  it("keys belong to the API key that used them: another key with the same text acts anew", async () => {
    const k = key();
    const a = await publicClient(cp.app, d.api_keys.org_rw).post("/projects", { name: "A", server_id: d.server_id }, { "x-idempotency-key": k });
    const other = await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: "second", createdBy: null });
    const b = await publicClient(cp.app, other.key).post("/projects", { name: "B", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it("a request refused by validation is not cached: the corrected request with the same key runs", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const k = key();
    const bad = await api.post("/projects", { name: "", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(bad.status).toBe(400);
    const good = await api.post("/projects", { name: "Fixed", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(good.status).toBe(201);
    expect(good.body.name).toBe("Fixed");
  });

  it("GET, PATCH and DELETE ignore the header", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const k = key();
    const p1 = await api.patch(`/projects/${d.project_id}`, { name: "Renamed 1" }, { "x-idempotency-key": k });
    const p2 = await api.patch(`/projects/${d.project_id}`, { name: "Renamed 2" }, { "x-idempotency-key": k });
    expect(p1.body.name).toBe("Renamed 1");
    expect(p2.body.name).toBe("Renamed 2");
    expect(p2.headers["x-idempotency-replayed"]).toBeUndefined();
    const g = await api.get(`/projects/${d.project_id}`, { "x-idempotency-key": k });
    expect(g.body.name).toBe("Renamed 2");
  });

  it("an over-long or non-ASCII key is a clear 400", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const long = await api.post("/projects", { name: "x", server_id: d.server_id }, { "x-idempotency-key": "k".repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body.error).toBe("invalid_idempotency_key");
  });
});

describe("expiry after 24 hours", () => {
  it("the same key within 24 h replays; after 24 h it is a new request", async () => {
    const d = await demo();
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const k = key();
    const first = await api.post("/projects", { name: "Day one", server_id: d.server_id }, { "x-idempotency-key": k });
    cp.clock.advance(23 * 3600_000 + 59 * 60_000);
    const within = await api.post("/projects", { name: "Day one", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(within.body.id).toBe(first.body.id);
    expect(within.headers["x-idempotency-replayed"]).toBe("true");
    cp.clock.advance(2 * 60_000);
    const after = await api.post("/projects", { name: "Day two", server_id: d.server_id }, { "x-idempotency-key": k });
    expect(after.status).toBe(201);
    expect(after.body.id).not.toBe(first.body.id);
    expect(after.headers["x-idempotency-replayed"]).toBeUndefined();
  });
});

describe("a duplicate while the first request is in flight", () => {
  it("gets 409 idempotency_key_in_use, then the replay once the first finishes", async () => {
    const d = await demo();
    const server = await startControlPlane({ url: cp.url, listen: true });
    try {
      const address = server.app.server.address();
      if (!address || typeof address !== "object") throw new Error("not listening");
      const base = `http://127.0.0.1:${address.port}/api/public/v1`;
      const call = () =>
        fetch(`${base}/environments/${d.environments.running}/deploy`, {
          method: "POST",
          headers: { authorization: `Bearer ${d.api_keys.org_rw}`, "idempotency-key": k },
        });
      const k = key();
      // Hold the environment's row lock so the first request provably stays in flight.
      const blocker = new pg.Client({ connectionString: cp.url });
      await blocker.connect();
      await blocker.query("begin");
      await blocker.query("select id from environments where id = $1 for update", [d.environments.running]);
      const first = call();
      await waitFor(async () => {
        const { rows } = await cp.database.pool.query("select state from idempotency_records where key = $1", [k]);
        return rows[0]?.state === "in_flight";
      });
      const duplicates = await Promise.all([call(), call(), call()]);
      for (const dup of duplicates) {
        expect(dup.status).toBe(409);
        expect((await dup.json()).error).toBe("idempotency_key_in_use");
      }
      await blocker.query("commit");
      await blocker.end();
      const firstRes = await first;
      expect(firstRes.status).toBe(202);
      const firstBody = await firstRes.json();
      const replay = await call();
      expect(replay.status).toBe(202);
      expect(replay.headers.get("x-idempotency-replayed")).toBe("true");
      expect((await replay.json()).task_id).toBe(firstBody.task_id);
      const { rows } = await cp.database.pool.query("select count(*)::int as n from deployments where environment_id = $1", [d.environments.running]);
      expect(rows[0].n).toBe(1);
    } finally {
      await server.app.close();
      await server.database.close();
    }
  });
});

describe("a retry after the operation was made but its answer was lost", () => {
  // What a replica that died (or lost PostgreSQL) between the operation's commit and keeping
  // the answer leaves behind: the claim still in flight, its holder gone.
  const abandonClaim = (k: string) =>
    cp.database.pool.query(
      `update idempotency_records set state = 'in_flight', status_code = null, response_body = null, response_headers = null,
         locked_at = locked_at - interval '2 minutes' where key = $1`,
      [k],
    );
  // What a request that failed with a 5xx after the commit leaves: the key given up.
  const releaseClaim = (k: string) => cp.database.pool.query("delete from idempotency_records where key = $1", [k]);
  const operations = async (environmentId: string) =>
    (await cp.database.pool.query("select id from deployments where environment_id = $1", [environmentId])).rows.map((r) => r.id as string);

  for (const [lost, lose] of [
    ["the claim was abandoned", abandonClaim],
    ["the key was released", releaseClaim],
  ] as const) {
    it(`${lost}: the same key gets the operation it made, even after it finished, and nothing is made twice`, async () => {
      const d = await demo();
      const api = publicClient(cp.app, d.api_keys.org_rw);
      const env = d.environments.running;
      const k = key();
      const first = await api.post(`/environments/${env}/restart`, undefined, { "idempotency-key": k });
      expect(first.status).toBe(202);
      // The operation ran to its end meanwhile: nothing active would refuse a second one.
      await cp.database.pool.query("update deployments set status = 'success', completed_at = now() where id = $1", [first.body.task_id]);
      await lose(k);
      const retry = await api.post(`/environments/${env}/restart`, undefined, { "idempotency-key": k });
      expect(retry.status).toBe(202);
      expect(retry.body.task_id).toBe(first.body.task_id);
      expect(await operations(env)).toEqual([first.body.task_id]);
      // Another key is another request.
      const other = await api.post(`/environments/${env}/restart`, undefined, { "idempotency-key": key() });
      expect(other.status).toBe(202);
      expect(other.body.task_id).not.toBe(first.body.task_id);
    });
  }

  it("a backup: the retry answers with the backup the first try made, and no second record is left", async () => {
    const d = await demo();
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const env = d.environments.running;
    const k = key();
    const first = await api.post(`/environments/${env}/backups`, {}, { "idempotency-key": k });
    expect(first.status).toBe(202);
    await abandonClaim(k);
    const retry = await api.post(`/environments/${env}/backups`, {}, { "idempotency-key": k });
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ task_id: first.body.task_id, backup_id: first.body.backup_id });
    const { rows } = await cp.database.pool.query("select id from backups where environment_id = $1", [env]);
    expect(rows.map((r) => r.id)).toEqual([first.body.backup_id]);
  });

  it("after 24 hours the key no longer finds its operation: a new request makes a new one", async () => {
    const d = await demo();
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const env = d.environments.running;
    const k = key();
    const first = await api.post(`/environments/${env}/restart`, undefined, { "idempotency-key": k });
    await cp.database.pool.query("update deployments set status = 'success', completed_at = now() where id = $1", [first.body.task_id]);
    cp.clock.advance(24 * 3600_000 + 60_000);
    const later = await api.post(`/environments/${env}/restart`, undefined, { "idempotency-key": k });
    expect(later.status).toBe(202);
    expect(later.body.task_id).not.toBe(first.body.task_id);
  });
});
