// Webhook subscriptions and API keys (public spec 4.5, 5, 6; shapes designed by us).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

describe("webhook subscriptions", () => {
  it("create shows the signing secret once; reads never show it", async () => {
    const { rw, ro } = await freshOrganization(cp);
    const created = await rw.post("/webhooks", {
      url: "https://hooks.example.com/berth",
      events: ["deploy.completed", "deployment.failed", "environment.status_changed", "deploy.completed"],
      description: "CI notifications",
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      url: "https://hooks.example.com/berth",
      events: ["deploy.completed", "deployment.failed", "environment.status_changed"],
      description: "CI notifications",
      enabled: true,
      project_id: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await ro.get(`/webhooks/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const listed = await ro.get("/webhooks");
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    // Stored sealed with the master key (secrets-at-rest.test.ts), never in clear.
    const { rows } = await cp.database.pool.query("select secret, secret_enc from webhook_subscriptions where id = $1", [created.body.id]);
    expect(rows[0].secret).toBeNull();
    expect(rows[0].secret_enc).not.toContain(created.body.secret);
  });

  it.each([
    [{ url: "http://hooks.example.com/x" }, "invalid_webhook_url"],
    [{ url: "ftp://hooks.example.com/x" }, "invalid_webhook_url"],
    [{ url: "https://user:pw@hooks.example.com/x" }, "invalid_webhook_url"],
    [{ url: "not a url" }, "invalid_webhook_url"],
    [{ events: ["deploy.exploded"] }, "validation_error"],
    [{ events: [] }, "validation_error"],
  ])("refuses %o with %s", async (patch, code) => {
    const { rw } = await freshOrganization(cp);
    const res = await rw.post("/webhooks", { url: "https://hooks.example.com/x", events: ["deploy.failed"], ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(code);
  });

  it.each([
    "http://127.0.0.1:9999/hook",
    "https://127.0.0.1:9999/hook",
    "https://localhost/hook",
    "https://[::1]/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://10.1.2.3/hook",
    "https://[::ffff:192.168.0.1]/hook",
  ])("refuses %s: a loopback, private or metadata receiver needs the operator's allow-list", async (url) => {
    const { rw } = await freshOrganization(cp);
    const res = await rw.post("/webhooks", { url, events: ["deploy.failed"] });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_webhook_url");
    const created = (await rw.post("/webhooks", { url: "https://hooks.example.com/x", events: ["deploy.failed"] })).body;
    const patched = await rw.patch(`/webhooks/${created.id}`, { url });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toBe("invalid_webhook_url");
  });

  it("update changes only what is sent; delete hides it", async () => {
    const { rw, ro } = await freshOrganization(cp);
    const created = (await rw.post("/webhooks", { url: "https://a.example.com/h", events: ["deploy.failed"] })).body;
    const updated = await rw.patch(`/webhooks/${created.id}`, { enabled: false, events: ["deployment.completed"] });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ url: "https://a.example.com/h", enabled: false, events: ["deployment.completed"] });
    expect((await rw.delete(`/webhooks/${created.id}`)).status).toBe(204);
    expect((await ro.get(`/webhooks/${created.id}`)).status).toBe(404);
    expect((await rw.patch(`/webhooks/${created.id}`, { enabled: true })).status).toBe(404);
    expect((await ro.get("/webhooks")).body.pagination.total).toBe(0);
  });

  it("a project-scoped key's subscriptions are tied to its project", async () => {
    const { d } = await freshOrganization(cp);
    const projectKey = publicClient(cp.app, d.api_keys.project_rw);
    const created = await projectKey.post("/webhooks", { url: "https://p.example.com/h", events: ["deploy.failed"] });
    expect(created.body.project_id).toBe(d.project_id);
    const orgOnly = await publicClient(cp.app, d.api_keys.org_rw).post("/webhooks", { url: "https://o.example.com/h", events: ["deploy.failed"] });
    expect(orgOnly.body.project_id).toBeNull();
    const seen = await publicClient(cp.app, d.api_keys.project_ro).get("/webhooks");
    expect(seen.body.data.map((w: { id: string }) => w.id)).toEqual([created.body.id]);
    expect((await projectKey.get(`/webhooks/${orgOnly.body.id}`)).status).toBe(404);
  });
});

describe("API keys", () => {
  it("lists keys with prefix and scope, never the key or its hash", async () => {
    const { ro, d } = await freshOrganization(cp);
    const res = await ro.get("/api-keys");
    expect(res.status).toBe(200);
    expect(res.body.pagination.total).toBe(4);
    const text = JSON.stringify(res.body);
    for (const k of Object.values(d.api_keys)) expect(text).not.toContain(k);
    const byPrefix = new Map(res.body.data.map((k: { prefix: string }) => [k.prefix, k]));
    expect(byPrefix.get(d.api_keys.project_ro.slice(0, 16))).toMatchObject({ access: "read_only", scope: "project", project_id: d.project_id, revoked_at: null });
    expect(byPrefix.get(d.api_keys.org_rw.slice(0, 16))).toMatchObject({ access: "full_access", scope: "organization", project_id: null });
    const { rows } = await cp.database.pool.query("select key_hash from api_keys where organization_id = $1", [d.organization_id]);
    for (const r of rows) expect(Object.values(d.api_keys)).not.toContain(r.key_hash);
  });

  it("revoking a key stops it at once on the revoking replica and moments later on every other one; revoking again keeps the first time", async () => {
    const { rw, ro, d } = await freshOrganization(cp);
    const second = await startControlPlane({ url: cp.url });
    try {
      const target = (await ro.get("/api-keys")).body.data.find((k: { prefix: string }) => k.prefix === d.api_keys.project_ro.slice(0, 16));
      expect((await publicClient(second.app, d.api_keys.project_ro).get("/projects")).status).toBe(200);
      const revoked = await rw.delete(`/api-keys/${target.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.revoked_at).not.toBeNull();
      const here = await publicClient(cp.app, d.api_keys.project_ro).get("/projects");
      expect(here.status).toBe(401);
      expect(here.body.error).toBe("api_key_revoked");
      // The other replica remembered the key; it forgets it when the NOTIFY arrives.
      let there = await publicClient(second.app, d.api_keys.project_ro).get("/projects");
      for (let i = 0; there.status === 200 && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 20));
        there = await publicClient(second.app, d.api_keys.project_ro).get("/projects");
      }
      expect(there.status).toBe(401);
      expect(there.body.error).toBe("api_key_revoked");
      const again = await rw.delete(`/api-keys/${target.id}`);
      expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    } finally {
      await second.app.close();
      await second.database.close();
    }
  });

  it("records when a key was last used", async () => {
    const { ro, d } = await freshOrganization(cp);
    const { rows: before } = await cp.database.pool.query("select last_used_at from api_keys where display_prefix = $1", [d.api_keys.org_ro.slice(0, 16)]);
    expect(before[0].last_used_at).toBeNull();
    await ro.get("/projects");
    // Written behind the requests, within seconds (modules/api-keys/key-touches.ts).
    await expect
      .poll(async () => (await ro.get("/api-keys")).body.data.find((k: { prefix: string }) => k.prefix === d.api_keys.org_ro.slice(0, 16)).last_used_at)
      .not.toBeNull();
  });
});
