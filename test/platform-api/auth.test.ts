// Sign-up, sign-in, sessions and what a person sees of themselves (platform API).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, startOfRateWindow, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient } from "../support/http.ts";
import { addPerson, TEST_PASSWORD } from "../support/people.ts";

let cp: TestControlPlane;
let demo: Awaited<ReturnType<typeof createDemoOrganization>>;

beforeAll(async () => {
  cp = await startControlPlane();
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
});
afterAll(async () => cp?.close());

describe("accounts and sessions", () => {
  it("registers a person who owns a new organisation and is signed in", async () => {
    const anon = platformClient(cp.app, null);
    const res = await anon.post("/auth/register", { email: "Ada@Example.test", name: "Ada", password: TEST_PASSWORD, organization_name: "Ada's ERP" });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^bst_/);
    const me = await platformClient(cp.app, res.body.token).get("/me");
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe("Ada@Example.test");
    expect(me.body.organizations).toEqual([expect.objectContaining({ id: res.body.organization.id, role: "org_owner" })]);
    expect(me.body.organizations[0].permissions).toContain("org.audit.read");
    // The e-mail address is taken, whatever its case.
    const again = await anon.post("/auth/register", { email: "ada@example.test", name: "Ada 2", password: TEST_PASSWORD, organization_name: "x" });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("email_taken");
  });

  it("refuses a short password and a malformed e-mail address with field details", async () => {
    const res = await platformClient(cp.app, null).post("/auth/register", { email: "not-an-email", name: "x", password: "short", organization_name: "x" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_error");
  });

  it("signs in with the right password only; the password is stored as scrypt, never in clear", async () => {
    const p = await addPerson(cp.app, "project_member", { organizationId: demo.organization_id, projectId: demo.project_id });
    const anon = platformClient(cp.app, null);
    const wrong = await anon.post("/auth/login", { email: p.email, password: "wrong password!!" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("invalid_credentials");
    const unknown = await anon.post("/auth/login", { email: "nobody@example.test", password: TEST_PASSWORD });
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe(wrong.body.message);
    const { rows } = await cp.database.pool.query("select password_hash from users where id = $1", [p.userId]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(rows[0].password_hash).not.toContain(TEST_PASSWORD);
    const { rows: tokens } = await cp.database.pool.query("select token_hash from sessions where user_id = $1", [p.userId]);
    expect(tokens.map((t) => t.token_hash)).not.toContain(p.token);
  });

  it("answers 401 with a code for a missing, malformed, unknown or signed-out token", async () => {
    expect((await platformClient(cp.app, null).get("/me")).body.error).toBe("authentication_required");
    expect((await platformClient(cp.app, null, { authorization: "Basic abc" }).get("/me")).body.error).toBe("invalid_authorization_header");
    expect((await platformClient(cp.app, "bst_made_up").get("/me")).body.error).toBe("invalid_session");
    const p = await addPerson(cp.app, "project_member", { organizationId: demo.organization_id, projectId: demo.project_id });
    expect((await p.api.post("/auth/logout")).status).toBe(204);
    const after = await p.api.get("/me");
    expect(after.status).toBe(401);
    expect(after.body.error).toBe("invalid_session");
  });

  it("lists my sessions and signs one out from another", async () => {
    const p = await addPerson(cp.app, "org_admin", { organizationId: demo.organization_id });
    const second = await platformClient(cp.app, null, { "user-agent": "laptop" }).post("/auth/login", { email: p.email, password: TEST_PASSWORD });
    const laptop = platformClient(cp.app, second.body.token);
    const list = await p.api.get("/auth/sessions");
    expect(list.body.data).toHaveLength(2);
    expect(list.body.data.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    const other = list.body.data.find((s: { current: boolean }) => !s.current);
    expect(other.user_agent).toBe("laptop");
    expect((await p.api.delete(`/auth/sessions/${other.id}`)).status).toBe(204);
    expect((await laptop.get("/me")).status).toBe(401);
    expect((await p.api.get("/me")).status).toBe(200);
    // Someone else's session is not mine to end.
    const stranger = await addPerson(cp.app, "outsider", { organizationId: demo.organization_id });
    const mine = (await p.api.get("/auth/sessions")).body.data[0].id;
    expect((await stranger.api.delete(`/auth/sessions/${mine}`)).status).toBe(404);
  });

  it("expires a session after its lifetime", async () => {
    const p = await addPerson(cp.app, "project_member", { organizationId: demo.organization_id, projectId: demo.project_id });
    await cp.database.pool.query("update sessions set expires_at = now() - interval '1 second' where user_id = $1", [p.userId]);
    expect((await p.api.get("/me")).body.error).toBe("invalid_session");
  });

  it("limits sign-in attempts per account with the rate-limit headers", async () => {
    const p = await addPerson(cp.app, "project_member", { organizationId: demo.organization_id, projectId: demo.project_id });
    const anon = platformClient(cp.app, null);
    startOfRateWindow(cp);
    let last = await anon.post("/auth/login", { email: p.email, password: "wrong password!!" });
    for (let i = 0; i < 10; i++) last = await anon.post("/auth/login", { email: p.email, password: "wrong password!!" });
    expect(last.status).toBe(429);
    expect(last.headers["x-ratelimit-limit"]).toBe("10");
    expect(Number(last.headers["retry-after"])).toBeGreaterThan(0);
  });
});

describe("members and API keys", () => {
  it("an admin gives a member a project role, and issues an API key shown once", async () => {
    const admin = await addPerson(cp.app, "org_admin", { organizationId: demo.organization_id });
    // Members join by invitation (invitations.test.ts); this one already belongs.
    const added = await addPerson(cp.app, "org_member", { organizationId: demo.organization_id });
    const role = await admin.api.put(`/projects/${demo.project_id}/members/${added.userId}`, { role: "admin" });
    expect(role.status).toBe(200);
    const login = await platformClient(cp.app, null).post("/auth/login", { email: added.email, password: TEST_PASSWORD });
    const me = await platformClient(cp.app, login.body.token).get("/me");
    expect(me.body.projects).toEqual([expect.objectContaining({ id: demo.project_id, role: "project_admin" })]);
    expect(me.body.projects[0].permissions).toContain("project.environments.deploy");

    const key = await admin.api.post(`/organizations/${demo.organization_id}/api-keys`, { name: "ci", access: "read_only", project_id: demo.project_id });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^svc_live_ro_/);
    const listed = await admin.api.get(`/organizations/${demo.organization_id}/api-keys?limit=100`);
    const found = listed.body.data.find((k: { id: string }) => k.id === key.body.id);
    expect(found).toMatchObject({ name: "ci", scope: "project" });
    expect(found.key).toBeUndefined();
    // The key works on the public API until it is revoked here.
    const pub = await cp.app.inject({ method: "GET", url: `/api/public/v1/projects/${demo.project_id}`, headers: { authorization: `Bearer ${key.body.key}` } });
    expect(pub.statusCode).toBe(200);
    expect((await admin.api.delete(`/organizations/${demo.organization_id}/api-keys/${key.body.id}`)).status).toBe(200);
    const revoked = await cp.app.inject({ method: "GET", url: `/api/public/v1/projects/${demo.project_id}`, headers: { authorization: `Bearer ${key.body.key}` } });
    expect(revoked.statusCode).toBe(401);
  });

  it("members cannot manage members or keys; admins cannot make owners; outsiders see nothing", async () => {
    const member = await addPerson(cp.app, "project_admin", { organizationId: demo.organization_id, projectId: demo.project_id });
    const denied = await member.api.post(`/organizations/${demo.organization_id}/api-keys`, { name: "x", access: "full_access" });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe("You don't have permission to manage API keys.");
    const admin = await addPerson(cp.app, "org_admin", { organizationId: demo.organization_id });
    const owner = await admin.api.put(`/organizations/${demo.organization_id}/members`, { email: member.email, role: "owner" });
    expect(owner.status).toBe(403);
    const outsider = await addPerson(cp.app, "outsider", { organizationId: demo.organization_id });
    expect((await outsider.api.get(`/organizations/${demo.organization_id}/members`)).status).toBe(404);
    expect((await outsider.api.get("/organizations")).body.data).toEqual([]);
  });
});
