// The public API while PostgreSQL is unreachable: the control plane's connections go through a
// TCP proxy the test cuts (no mock). A request then gets 503 database_unavailable with
// Retry-After, not a 500, and its Idempotency-Key is given up once the database is back, so
// the retry with the same key does the work once.
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import type { TestDatabase } from "../support/database.ts";
import { publicClient } from "../support/http.ts";
import { databaseBehindProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { waitForValue, waitUntil } from "../support/wait.ts";

let db: TestDatabase;
let proxy: TcpProxy;
let cp: TestControlPlane;
let d: DemoOrganization;
let key: string;

beforeAll(async () => {
  let url: string;
  ({ db, proxy, url } = await databaseBehindProxy());
  cp = await startControlPlane({ url });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  key = (await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: "t", createdBy: null })).key;
});
afterEach(() => proxy?.restore());
afterAll(async () => {
  await cp?.close();
  await proxy?.close();
  await db?.drop();
});

describe("the public API while the database is unreachable", () => {
  it("answers 503 database_unavailable with Retry-After; the same Idempotency-Key then does the work once", async () => {
    const api = publicClient(cp.app, key);
    const idem = { "idempotency-key": "outage-create-1" };
    const project = { name: "Made after the outage", server_id: d.server_id };
    expect((await api.get("/projects")).status).toBe(200);

    proxy.cut();
    for (const res of [await api.get("/projects"), await api.post("/projects", project, idem)]) {
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe("2");
      expect(res.body).toMatchObject({ error: "database_unavailable", retry_after: 2, request_id: expect.any(String) });
    }

    proxy.restore();
    // The retry with the same key is not refused as in use: the failed request gave it up.
    const created = await waitForValue(
      "the retry to be answered",
      async () => {
        const res = await api.post("/projects", project, idem);
        return res.status === 503 ? undefined : res;
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(created.status).toBe(201);
    const replay = await api.post("/projects", project, idem);
    expect(replay.status).toBe(201);
    expect(replay.headers["x-idempotency-replayed"]).toBe("true");
    const listed = await api.get("/projects?limit=100");
    expect((listed.body as { data: { name: string }[] }).data.filter((p) => p.name === project.name)).toHaveLength(1);
  });

  it("a request that loses the database half-way answers 503 too, and gives its key up once the database is back", async () => {
    const api = publicClient(cp.app, key);
    const idem = { "idempotency-key": "outage-create-2" };
    const project = { name: "Interrupted", server_id: d.server_id };
    // Past the proxy, a lock holds the request's insert after it has claimed its key.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("lock table projects in exclusive mode");
      const pending = api.post("/projects", project, idem);
      await waitUntil(
        "the insert to wait on the lock",
        async () => (await locker.query("select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")).rowCount! > 0,
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      proxy.cut();
      const res = await pending;
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ error: "database_unavailable", retry_after: 2 });
      await locker.query("rollback");
    } finally {
      await locker.end();
    }
    proxy.restore();
    // Not idempotency_key_in_use until the claim is abandoned (60 s): the key was given up.
    const created = await waitForValue(
      "the retry to be answered",
      async () => {
        const r = await api.post("/projects", project, idem);
        return r.status === 503 || (r.status === 409 && (r.body as { error: string }).error === "idempotency_key_in_use") ? undefined : r;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    expect(created.status).toBe(201);
  });
});
