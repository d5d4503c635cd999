// Cursor pagination: every item exactly once, newest first, on every list (property test).
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { projects } from "@berth/db";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

async function walk(key: string, path: string, limit: number) {
  const api = publicClient(cp.app, key);
  const seen: { id: string; created_at: string }[] = [];
  let cursor: string | null = null;
  let pages = 0;
  let total = -1;
  do {
    // Keep the walk clear of the per-key rate limit: it is not what is tested here.
    cp.clock.advance(60_000);
    const res = await api.get(`${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    if (total >= 0) expect(res.body.pagination.total).toBe(total);
    total = res.body.pagination.total;
    seen.push(...res.body.data);
    cursor = res.body.pagination.next_cursor;
    expect(res.body.pagination.has_more).toBe(cursor !== null);
    pages++;
  } while (cursor);
  return { seen, pages, total };
}

describe("projects list", () => {
  it("visits every project exactly once, newest first, with equal timestamps broken by id", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 5 }),
        async (count, limit, distinctTimes) => {
          const d = await createDemoOrganization(cp.database.db, cp.app.services);
          const base = Date.now();
          if (count > 0) {
            await cp.database.db.insert(projects).values(
              Array.from({ length: count }, (_, i) => ({
                organizationId: d.organization_id,
                serverId: d.server_id,
                name: `p${i}`,
                // Few distinct timestamps, so many rows tie on created_at.
                createdAt: new Date(base - (i % distinctTimes) * 1000),
              })),
            );
          }
          const { seen, total } = await walk(d.api_keys.org_ro, "/projects", limit);
          const expected = count + 1; // plus the demo project
          expect(total).toBe(expected);
          expect(seen).toHaveLength(expected);
          expect(new Set(seen.map((p) => p.id)).size).toBe(expected);
          for (let i = 1; i < seen.length; i++) {
            const [a, b] = [seen[i - 1]!, seen[i]!];
            const order = a.created_at === b.created_at ? a.id > b.id : a.created_at > b.created_at;
            expect(order).toBe(true);
          }
        },
      ),
      { numRuns: 15 },
    );
  }, 120_000);

  it("is not disturbed by projects created during the walk", async () => {
    const d = await createDemoOrganization(cp.database.db, cp.app.services);
    const api = publicClient(cp.app, d.api_keys.org_rw);
    for (let i = 0; i < 5; i++) await api.post("/projects", { name: `old ${i}`, server_id: d.server_id });
    cp.clock.advance(61_000);
    const first = await api.get("/projects?limit=3");
    await api.post("/projects", { name: "new during walk", server_id: d.server_id });
    const second = await api.get(`/projects?limit=3&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`);
    const ids = [...first.body.data, ...second.body.data].map((p: { id: string }) => p.id);
    expect(new Set(ids).size).toBe(6);
    expect(second.body.data.map((p: { name: string }) => p.name)).not.toContain("new during walk");
  });
});

describe("every list endpoint", () => {
  let d: DemoOrganization;
  beforeAll(async () => {
    d = await createDemoOrganization(cp.database.db, cp.app.services);
    const api = publicClient(cp.app, d.api_keys.org_rw);
    for (let i = 0; i < 4; i++) await api.post("/webhooks", { url: `https://h.example.com/${i}`, events: ["deploy.failed"] });
    for (let i = 0; i < 3; i++) await api.post("/environments", { project_id: d.project_id, name: `extra-${i}` });
    for (let i = 0; i < 3; i++) {
      await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "read_only", name: `k${i}`, createdBy: null });
    }
  });

  it.each([
    ["/projects", 1],
    ["/servers", 1],
    ["/webhooks", 4],
    ["/api-keys", 7],
    ["/projects/{project}/environments", 5],
  ])("%s pages through all %i items with limit 2", async (path, expected) => {
    const { seen, total } = await walk(d.api_keys.org_ro, path.replace("{project}", d.project_id), 2);
    expect(total).toBe(expected);
    expect(new Set(seen.map((x) => x.id)).size).toBe(expected);
  });

  it("deployment history pages through deploy and redeploy tasks only", async () => {
    // Each action ends the previous one so a new one can be queued.
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const env = d.environments.running;
    const made: string[] = [];
    for (const action of ["deploy", "restart", "actions/redeploy", "deploy"]) {
      cp.clock.advance(61_000);
      const res = await api.post(`/environments/${env}/${action}`);
      expect(res.status).toBe(202);
      if (!action.endsWith("restart")) made.push(res.body.task_id);
      await cp.database.pool.query("update deployments set status = 'success' where id = $1", [res.body.task_id]);
    }
    const { seen, total } = await walk(d.api_keys.org_ro, `/environments/${env}/deployments`, 2);
    expect(total).toBe(3);
    expect(seen.map((t) => t.id)).toEqual(made.reverse());
  });
});

describe("bad page parameters", () => {
  let d: DemoOrganization;
  beforeAll(async () => {
    d = await createDemoOrganization(cp.database.db, cp.app.services);
  });

  it.each(["0", "101", "abc", "-1", "2.5"])("limit=%s is a 400 validation_error", async (limit) => {
    cp.clock.advance(61_000);
    const res = await publicClient(cp.app, d.api_keys.org_ro).get(`/projects?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_error");
    expect(res.body.details[0].path).toContain("limit");
  });

  it("a tampered, foreign or garbage cursor is a 400 invalid_cursor", async () => {
    const api = publicClient(cp.app, d.api_keys.org_rw);
    await api.post("/projects", { name: "second", server_id: d.server_id });
    await api.post("/webhooks", { url: "https://h.example.com/a", events: ["deploy.failed"] });
    await api.post("/webhooks", { url: "https://h.example.com/b", events: ["deploy.failed"] });
    const page = await api.get("/projects?limit=1");
    const cursor: string = page.body.pagination.next_cursor;
    const [body, sig] = cursor.split(".");
    const forgedBody = Buffer.from(JSON.stringify(["projects", 0, "00000000-0000-4000-8000-000000000000"])).toString("base64url");
    const webhooksCursor = (await api.get("/webhooks?limit=1")).body.pagination.next_cursor;
    for (const bad of [`${body}x.${sig}`, `${forgedBody}.${sig}`, "garbage", `${body}.${sig}.extra`, webhooksCursor]) {
      cp.clock.advance(61_000);
      const res = await api.get(`/projects?cursor=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_cursor");
    }
  });
});
