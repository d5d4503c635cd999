// Members and owners (platform API): the owner rules (security finding 4: an admin could
// demote the owners, and nobody could restore them) and taking access away (finding 7:
// removing a member, revoking a member's sessions and keys, and ending their open event
// streams at once, on every replica). Every attack is made over real HTTP against two
// replicas on one real PostgreSQL; the streams are read with a real HTTP client.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient, publicClient, type Res } from "../support/http.ts";
import { addPerson, TEST_PASSWORD, type Person } from "../support/people.ts";
import { SseStream, urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let replica: TestControlPlane;
let demo: DemoOrganization;
const open: SseStream[] = [];

/** The server must end a stream within this long of the change that took its access away. */
const CLOSED_WITHIN_MS = 2500;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  replica = await startControlPlane({ url: cp.url, listen: true });
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
}, 60_000);

afterAll(async () => {
  for (const s of open) s.close();
  await replica?.stop();
  await cp?.close();
});

/** A new organisation and the person who registered it, its only owner (signed in without the sign-in rate limit). */
async function newOrganization(): Promise<{ orgId: string; owner: Person }> {
  const email = `founder-${randomUUID().slice(0, 8)}@example.test`;
  const r = await cp.app.services.sessions.register({ email, name: "Founder", password: TEST_PASSWORD, organizationName: `Org ${email}` }, {});
  return { orgId: r.organization.id, owner: { userId: r.user.id, email, token: r.token, api: platformClient(cp.app, r.token) } };
}

async function roleOf(orgId: string, userId: string): Promise<string | undefined> {
  const { rows } = await cp.database.pool.query<{ role: string }>("select role from memberships where organization_id = $1 and user_id = $2", [orgId, userId]);
  return rows[0]?.role;
}

/** An open event stream of the organisation, on the replica given (default: the first one), once it is live. */
async function streamOf(orgId: string, token: string, on: TestControlPlane = cp): Promise<SseStream> {
  const s = await SseStream.open(urlOf(on), { organization_id: orgId }, { token });
  open.push(s);
  expect(s.status).toBe(200);
  await s.until((x) => x.lastId !== null, "the opening id");
  return s;
}

const closedByServer = (s: SseStream) => s.until((x) => x.ended, "the server to close the stream", CLOSED_WITHIN_MS);

/** The request was refused with this status and error code. */
function expectRefused(res: Res, status: number, code: string) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error: code });
}

async function signIn(email: string): Promise<string> {
  const res = await platformClient(cp.app, null).post("/auth/login", { email, password: TEST_PASSWORD });
  expect(res.status).toBe(200);
  return res.body.token as string;
}

describe("owners: only owners change owners, and the last one stays", () => {
  it("an admin can neither demote, remove, sign out nor make an owner; the owner stays owner", async () => {
    const { orgId, owner } = await newOrganization();
    const admin = await addPerson(cp.app, "org_admin", { organizationId: orgId });
    const member = await addPerson(cp.app, "org_member", { organizationId: orgId });

    expectRefused(await admin.api.put(`/organizations/${orgId}/members`, { email: owner.email, role: "admin" }), 403, "owner_required");
    expectRefused(await admin.api.delete(`/organizations/${orgId}/members/${owner.userId}`), 403, "owner_required");
    expectRefused(await admin.api.delete(`/organizations/${orgId}/members/${owner.userId}/sessions`), 403, "owner_required");
    expectRefused(await admin.api.put(`/organizations/${orgId}/members`, { email: member.email, role: "owner" }), 403, "owner_required");
    expectRefused(await admin.api.put(`/organizations/${orgId}/members`, { email: admin.email, role: "owner" }), 403, "owner_required");

    expect(await roleOf(orgId, owner.userId)).toBe("owner");
    expect(await roleOf(orgId, member.userId)).toBe("member");
    expect(await roleOf(orgId, admin.userId)).toBe("admin");
    const listed = await owner.api.get(`/organizations/${orgId}/members`);
    expect(listed.body.data.find((m: { user_id: string }) => m.user_id === owner.userId).role).toBe("owner");
    expect((await owner.api.get("/me")).status).toBe(200);
  });

  it("an admin still manages admins and members", async () => {
    const { orgId } = await newOrganization();
    const admin = await addPerson(cp.app, "org_admin", { organizationId: orgId });
    const other = await addPerson(cp.app, "org_admin", { organizationId: orgId });
    const demoted = await admin.api.put(`/organizations/${orgId}/members`, { email: other.email, role: "member" });
    expect(demoted.status).toBe(200);
    expect(demoted.body.role).toBe("member");
    const promoted = await admin.api.put(`/organizations/${orgId}/members`, { email: other.email, role: "admin" });
    expect(promoted.body.role).toBe("admin");
    expect((await admin.api.delete(`/organizations/${orgId}/members/${other.userId}`)).status).toBe(204);
    expect(await roleOf(orgId, other.userId)).toBeUndefined();
  });

  it("the last owner can neither demote nor remove themself", async () => {
    const { orgId, owner } = await newOrganization();
    expectRefused(await owner.api.put(`/organizations/${orgId}/members`, { email: owner.email, role: "admin" }), 409, "last_owner");
    expectRefused(await owner.api.delete(`/organizations/${orgId}/members/${owner.userId}`), 409, "last_owner");
    expect(await roleOf(orgId, owner.userId)).toBe("owner");
  });

  it("an owner makes a second owner, then the first can be demoted; the second is then the last", async () => {
    const { orgId, owner } = await newOrganization();
    const second = await addPerson(cp.app, "org_member", { organizationId: orgId });
    const made = await owner.api.put(`/organizations/${orgId}/members`, { email: second.email, role: "owner" });
    expect(made.status).toBe(200);
    expect(made.body.role).toBe("owner");
    const demoted = await owner.api.put(`/organizations/${orgId}/members`, { email: owner.email, role: "admin" });
    expect(demoted.status).toBe(200);
    expect(await roleOf(orgId, owner.userId)).toBe("admin");
    // Now an admin: they cannot make themself owner again, nor touch the remaining owner.
    expectRefused(await owner.api.put(`/organizations/${orgId}/members`, { email: owner.email, role: "owner" }), 403, "owner_required");
    expectRefused(await owner.api.delete(`/organizations/${orgId}/members/${second.userId}`), 403, "owner_required");
    expectRefused(await second.api.delete(`/organizations/${orgId}/members/${second.userId}`), 409, "last_owner");
    // The owner may remove the former one altogether.
    expect((await second.api.delete(`/organizations/${orgId}/members/${owner.userId}`)).status).toBe(204);
    expect(await roleOf(orgId, second.userId)).toBe("owner");
  });

  it("a portal admin may change owners, but not leave an organisation without one", async () => {
    const { orgId, owner } = await newOrganization();
    const portal = await addPerson(cp.app, "portal_admin", { organizationId: orgId });
    const member = await addPerson(cp.app, "org_member", { organizationId: orgId });
    expect((await portal.api.put(`/organizations/${orgId}/members`, { email: member.email, role: "owner" })).status).toBe(200);
    expect((await portal.api.delete(`/organizations/${orgId}/members/${owner.userId}`)).status).toBe(204);
    expectRefused(await portal.api.put(`/organizations/${orgId}/members`, { email: member.email, role: "member" }), 409, "last_owner");
    expect(await roleOf(orgId, member.userId)).toBe("owner");
    // An organisation that does not exist is a 404, not a crash.
    expect((await portal.api.put(`/organizations/${randomUUID()}/members`, { email: member.email, role: "member" })).status).toBe(404);
  });
});

describe("removing a member ends their access at once", () => {
  it("the removed person gets 404 on the organisation's resources, their streams on both replicas are closed, their keys revoked", async () => {
    const org = demo.organization_id;
    const admin = await addPerson(cp.app, "org_admin", { organizationId: org });
    const victim = await addPerson(cp.app, "org_admin", { organizationId: org });
    expect((await admin.api.put(`/projects/${demo.project_id}/members/${victim.userId}`, { role: "admin" })).status).toBe(200);
    const key = await victim.api.post(`/organizations/${org}/api-keys`, { name: "victim's", access: "read_only" });
    expect(key.status).toBe(201);
    expect((await publicClient(cp.app, key.body.key).get("/projects")).status).toBe(200);
    expect((await victim.api.get(`/organizations/${org}/members`)).status).toBe(200);
    expect((await victim.api.get(`/deployments?project_id=${demo.project_id}`)).status).toBe(200);

    const watcher = await streamOf(org, admin.token);
    const here = await streamOf(org, victim.token);
    const there = await streamOf(org, victim.token, replica);

    const removed = await admin.api.delete(`/organizations/${org}/members/${victim.userId}`);
    expect(removed.status).toBe(204);
    await closedByServer(here);
    await closedByServer(there);

    expect((await victim.api.get(`/organizations/${org}/members`)).status).toBe(404);
    expect((await victim.api.get(`/organizations/${org}/projects`)).status).toBe(404);
    expect((await victim.api.get(`/deployments?project_id=${demo.project_id}`)).status).toBe(404);
    expect((await victim.api.post(`/organizations/${org}/api-keys`, { name: "again", access: "full_access" })).status).toBe(404);
    const reopened = await SseStream.open(urlOf(replica), { organization_id: org }, { token: victim.token });
    expect(reopened.status).toBe(404);
    for (const t of [cp, replica]) expectRefused(await publicClient(t.app, key.body.key).get("/projects"), 401, "api_key_revoked");
    // Their project role went with the membership: adding them back gives them no project.
    await cp.app.services.memberships.addToOrganization(org, victim.userId, "member");
    expect((await victim.api.get("/me")).body.projects).toEqual([]);
    await admin.api.delete(`/organizations/${org}/members/${victim.userId}`);

    // Only their streams ended; their session still works outside the organisation.
    expect(watcher.ended).toBe(false);
    expect((await victim.api.get("/me")).status).toBe(200);
  });

  it("a non-member, someone of another organisation, or any organisation the caller is not in is a 404", async () => {
    const org = demo.organization_id;
    const admin = await addPerson(cp.app, "org_admin", { organizationId: org });
    const elsewhere = await newOrganization();
    expect((await admin.api.delete(`/organizations/${org}/members/${elsewhere.owner.userId}`)).status).toBe(404);
    expect((await admin.api.delete(`/organizations/${org}/members/${randomUUID()}`)).status).toBe(404);
    expect((await admin.api.delete(`/organizations/${org}/members/${elsewhere.owner.userId}/sessions`)).status).toBe(404);
    const intoOther = await admin.api.delete(`/organizations/${elsewhere.orgId}/members/${elsewhere.owner.userId}`);
    expect(intoOther.status).toBe(404);
    expect(await roleOf(elsewhere.orgId, elsewhere.owner.userId)).toBe("owner");
  });

  it("a plain member cannot remove others but may leave", async () => {
    const { orgId } = await newOrganization();
    const member = await addPerson(cp.app, "org_member", { organizationId: orgId });
    const other = await addPerson(cp.app, "org_member", { organizationId: orgId });
    expectRefused(await member.api.delete(`/organizations/${orgId}/members/${other.userId}`), 403, "permission_denied");
    expect((await member.api.delete(`/organizations/${orgId}/members/${other.userId}/sessions`)).status).toBe(403);
    expect((await member.api.delete(`/organizations/${orgId}/members/${member.userId}`)).status).toBe(204);
    expect((await member.api.get(`/organizations/${orgId}/members`)).status).toBe(404);
    expect(await roleOf(orgId, other.userId)).toBe("member");
  });

  it("removing a project role closes the person's streams (they reconnect seeing less); again is a 404", async () => {
    const org = demo.organization_id;
    const projectAdmin = await addPerson(cp.app, "project_admin", { organizationId: org, projectId: demo.project_id });
    const member = await addPerson(cp.app, "project_member", { organizationId: org, projectId: demo.project_id });
    const s = await streamOf(org, member.token, replica);
    expect((await projectAdmin.api.delete(`/projects/${demo.project_id}/members/${member.userId}`)).status).toBe(204);
    await closedByServer(s);
    expect((await member.api.get(`/deployments?project_id=${demo.project_id}`)).status).toBe(404);
    expect((await streamOf(org, member.token)).status).toBe(200);
    expectRefused(await projectAdmin.api.delete(`/projects/${demo.project_id}/members/${member.userId}`), 404, "not_found");
  });

  it("a changed role closes the person's streams, and they reconnect with the new one", async () => {
    const { orgId, owner } = await newOrganization();
    const admin = await addPerson(cp.app, "org_admin", { organizationId: orgId });
    const s = await streamOf(orgId, admin.token);
    const ownerStream = await streamOf(orgId, owner.token, replica);
    expect((await owner.api.put(`/organizations/${orgId}/members`, { email: admin.email, role: "member" })).status).toBe(200);
    await closedByServer(s);
    expect((await streamOf(orgId, admin.token)).status).toBe(200);
    expect(ownerStream.ended).toBe(false);
  });
});

describe("revoking a member's sessions", () => {
  it("their tokens get 401 at once, their open stream ends, their keys are revoked; they stay a member and can sign in again", async () => {
    const org = demo.organization_id;
    const admin = await addPerson(cp.app, "org_admin", { organizationId: org });
    const target = await addPerson(cp.app, "org_admin", { organizationId: org });
    const laptop = await signIn(target.email);
    const key = await target.api.post(`/organizations/${org}/api-keys`, { name: "target's", access: "full_access" });
    expect(key.status).toBe(201);
    const s = await streamOf(org, laptop, replica);

    const res = await admin.api.delete(`/organizations/${org}/members/${target.userId}/sessions`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user_id: target.userId, sessions_revoked: 2, api_keys_revoked: 1 });
    await closedByServer(s);
    for (const token of [target.token, laptop]) expectRefused(await platformClient(replica.app, token).get("/me"), 401, "invalid_session");
    const reopened = await SseStream.open(urlOf(cp), { organization_id: org }, { token: laptop });
    expect(reopened.status).toBe(401);
    expectRefused(await publicClient(replica.app, key.body.key).get("/projects"), 401, "api_key_revoked");

    expect(await roleOf(org, target.userId)).toBe("admin");
    const fresh = await signIn(target.email);
    expect((await platformClient(cp.app, fresh).get(`/organizations/${org}/members`)).status).toBe(200);
  });

  it("signing out (or revoking one of my sessions) ends the streams opened with that session only", async () => {
    const { orgId, owner } = await newOrganization();
    const second = await signIn(owner.email);
    const a = await streamOf(orgId, owner.token, replica);
    const b = await streamOf(orgId, second);
    expect((await owner.api.post("/auth/logout")).status).toBe(204);
    await closedByServer(a);
    const sessions = await platformClient(cp.app, second).get("/auth/sessions");
    expect(sessions.body.data).toHaveLength(1);
    expect(b.ended).toBe(false);
    expect((await platformClient(cp.app, second).delete(`/auth/sessions/${sessions.body.data[0].id}`)).status).toBe(204);
    await closedByServer(b);
  });
});

describe("the periodic access re-check", () => {
  it("ends streams whose membership or session went without a notification (written directly, or expired)", async () => {
    const { orgId } = await newOrganization();
    const gone = await addPerson(cp.app, "org_member", { organizationId: orgId });
    const expiring = await addPerson(cp.app, "org_member", { organizationId: orgId });
    const staying = await addPerson(cp.app, "org_member", { organizationId: orgId });
    const portal = await addPerson(cp.app, "portal_admin", { organizationId: orgId });
    const streams = {
      gone: await streamOf(orgId, gone.token),
      expiring: await streamOf(orgId, expiring.token),
      staying: await streamOf(orgId, staying.token),
      portal: await streamOf(orgId, portal.token),
    };
    const pool = cp.database.pool;
    await pool.query("delete from memberships where organization_id = $1 and user_id = $2", [orgId, gone.userId]);
    await pool.query("update sessions set expires_at = now() - interval '1 second' where user_id = $1", [expiring.userId]);
    await new Promise((r) => setTimeout(r, 300));
    expect(streams.gone.ended).toBe(false);

    await cp.app.maintenance.runOnce();
    await closedByServer(streams.gone);
    await closedByServer(streams.expiring);
    expect(streams.staying.ended).toBe(false);
    expect(streams.portal.ended).toBe(false);
  });
});
