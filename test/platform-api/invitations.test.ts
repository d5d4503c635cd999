// Members join by invitation only (security finding 2). The control plane mails each
// invitation over SMTP to a real SMTP receiver on 127.0.0.1; the invitee proves the mailbox
// with the single-use token in the link. The attack: someone registers an account under the
// victim's address before the victim is added; it must never end up in the organisation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient } from "../support/http.ts";
import { invitationToken, Mailbox } from "../support/mailbox.ts";
import { addPerson, TEST_PASSWORD, type Person } from "../support/people.ts";

let mailbox: Mailbox;
let cp: TestControlPlane;
let d: DemoOrganization;
let owner: Person;
let admin: Person;
const started: TestControlPlane[] = [];

beforeAll(async () => {
  mailbox = await Mailbox.start();
  cp = await startControlPlane({ mail: { smtpUrl: mailbox.url, from: "Berth <berth@example.test>" } });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
});

afterAll(async () => {
  for (const c of started) await c.close();
  await cp?.close();
  await mailbox?.close();
});

const anon = () => platformClient(cp.app, null);
const invite = (by: Person, email: string, role = "member", org = d.organization_id) => by.api.post(`/organizations/${org}/invitations`, { email, role });
const register = (app: TestControlPlane, body: Record<string, unknown>) => platformClient(app.app, null).post("/auth/register", { name: "Someone", password: TEST_PASSWORD, ...body });
const memberEmails = async () => ((await owner.api.get(`/organizations/${d.organization_id}/members`)).body.data as { email: string; role: string }[]);

describe("inviting", () => {
  it("mails a single-use link; registering with it makes the account a member with the role", async () => {
    const res = await invite(admin, "bob@example.test", "admin");
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ email: "bob@example.test", role: "admin", status: "pending", organization_id: d.organization_id });
    expect(res.body.token).toBeUndefined();

    const mail = await mailbox.latestTo("bob@example.test");
    expect(mail.from).toBe("berth@example.test");
    expect(mail.subject).toContain("invited you to");
    const token = invitationToken(mail);

    const looked = await anon().post("/invitations/lookup", { token });
    expect(looked.status).toBe(200);
    expect(looked.body).toMatchObject({ organization: { id: d.organization_id }, email: "bob@example.test", role: "admin", account_exists: false });

    const joined = await register(cp, { email: "Bob@Example.test", invitation_token: token });
    expect(joined.status, JSON.stringify(joined.body)).toBe(201);
    expect(joined.body.organization.id).toBe(d.organization_id);
    expect(await memberEmails()).toContainEqual(expect.objectContaining({ email: "Bob@Example.test", role: "admin" }));

    // Spent: a second use finds nothing.
    expect((await anon().post("/invitations/lookup", { token })).status).toBe(404);
    const again = await register(cp, { email: "bob2@example.test", invitation_token: token });
    expect(again.status).toBe(404);
    expect(again.body.error).toBe("invitation_not_found");
    expect((await admin.api.get(`/organizations/${d.organization_id}/invitations`)).body.data).toEqual([]);
  });

  it("an existing account accepts while signed in as the address it was sent to, and only that one", async () => {
    const carol = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    const dave = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    expect((await invite(owner, carol.email)).status).toBe(201);
    const token = invitationToken(await mailbox.latestTo(carol.email));
    expect((await anon().post("/invitations/lookup", { token })).body.account_exists).toBe(true);

    const wrong = await dave.api.post("/invitations/accept", { token });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe("invitation_email_mismatch");
    // Registering a new account with it is refused too: the address has one.
    expect((await register(cp, { email: carol.email, invitation_token: token })).body.error).toBe("email_taken");

    const ok = await carol.api.post("/invitations/accept", { token });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ organization_id: d.organization_id, role: "member" });
    expect((await carol.api.get("/organizations")).body.data.map((o: { id: string }) => o.id)).toContain(d.organization_id);
    expect((await dave.api.get("/organizations")).body.data).toEqual([]);
  });

  it("refuses duplicates and members, keeps the owner rules, and needs admin", async () => {
    expect((await invite(admin, "erin@example.test")).status).toBe(201);
    const dup = await invite(admin, "ERIN@example.test");
    expect([dup.status, dup.body.error]).toEqual([409, "invitation_exists"]);
    const member = await invite(admin, admin.email);
    expect([member.status, member.body.error]).toEqual([409, "already_member"]);
    const ownerByAdmin = await invite(admin, "frank@example.test", "owner");
    expect([ownerByAdmin.status, ownerByAdmin.body.error]).toEqual([403, "owner_required"]);
    expect((await invite(owner, "frank@example.test", "owner")).status).toBe(201);
    const plain = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
    expect((await invite(plain, "gina@example.test")).status).toBe(403);
    const outsider = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    expect((await invite(outsider, "gina@example.test")).status).toBe(404);
  });

  it("a resend replaces the link, a revoke ends it, and its week's end ends it too", async () => {
    const first = await invite(admin, "hank@example.test");
    const oldToken = invitationToken(await mailbox.latestTo("hank@example.test"));
    const count = mailbox.mails.length;
    const resent = await admin.api.post(`/organizations/${d.organization_id}/invitations/${first.body.id}/resend`);
    expect(resent.status).toBe(200);
    const newToken = invitationToken(await mailbox.latestTo("hank@example.test", count));
    expect(newToken).not.toBe(oldToken);
    expect((await anon().post("/invitations/lookup", { token: oldToken })).status).toBe(404);
    expect((await anon().post("/invitations/lookup", { token: newToken })).status).toBe(200);

    expect((await admin.api.delete(`/organizations/${d.organization_id}/invitations/${first.body.id}`)).status).toBe(204);
    expect((await anon().post("/invitations/lookup", { token: newToken })).status).toBe(404);
    expect((await register(cp, { email: "hank@example.test", invitation_token: newToken })).status).toBe(404);

    const late = await invite(admin, "ivy@example.test");
    const lateToken = invitationToken(await mailbox.latestTo("ivy@example.test"));
    // A week later (the row's expiry moved rather than the clock: people's sessions last a week too).
    await cp.database.pool.query("update invitations set expires_at = now() - interval '1 minute' where id = $1", [late.body.id]);
    expect((await anon().post("/invitations/lookup", { token: lateToken })).status).toBe(404);
    const listed = (await admin.api.get(`/organizations/${d.organization_id}/invitations`)).body.data.find((i: { id: string }) => i.id === late.body.id);
    expect(listed.status).toBe("expired");
    // An expired one can be sent again.
    expect((await admin.api.post(`/organizations/${d.organization_id}/invitations/${late.body.id}/resend`)).body.status).toBe("pending");
  });

  it("when the mail server refuses, the invitation is not kept and the answer says so", async () => {
    mailbox.refuseWith = "4.3.0 mailbox temporarily unavailable";
    try {
      const res = await invite(admin, "jane@example.test");
      expect(res.status).toBe(503);
      expect(res.body.error).toBe("mail_unavailable");
      expect(res.body.message).not.toContain("4.3.0");
    } finally {
      mailbox.refuseWith = null;
    }
    const listed = (await admin.api.get(`/organizations/${d.organization_id}/invitations`)).body.data;
    expect(listed.map((i: { email: string }) => i.email)).not.toContain("jane@example.test");
    expect((await invite(admin, "jane@example.test")).status).toBe(201);
  });
});

describe("the pre-registration attack", () => {
  it("an account registered under the victim's address is never attached: not by naming it, not without the token", async () => {
    // The attacker registers victim@corp before the victim is added (registration verifies no address).
    const attacker = await register(cp, { email: "victim@corp.example", organization_name: "Attacker Inc" });
    expect(attacker.status).toBe(201);
    const attackerApi = platformClient(cp.app, attacker.body.token);

    // Naming the address no longer adds whoever holds an account with it.
    const named = await admin.api.put(`/organizations/${d.organization_id}/members`, { email: "victim@corp.example", role: "member" });
    expect(named.status).toBe(404);
    expect(named.body.message).toContain("invite them");

    // The invitation goes to the victim's mailbox; the attacker's account holds no token.
    expect((await invite(admin, "victim@corp.example")).status).toBe(201);
    const guessed = await attackerApi.post("/invitations/accept", { token: `bin_${"A".repeat(43)}` });
    expect(guessed.status).toBe(404);
    expect((await attackerApi.get("/organizations")).body.data.map((o: { id: string }) => o.id)).not.toContain(d.organization_id);
    expect((await attackerApi.get(`/organizations/${d.organization_id}/members`)).status).toBe(404);
    expect((await memberEmails()).map((m) => m.email)).not.toContain("victim@corp.example");
  });
});

describe("BERTH_REGISTRATION", () => {
  it("invite: no self-service organisations, but an invitation makes an account; closed: existing accounts only", async () => {
    const inviteOnly = await startControlPlane({ url: cp.url, registration: "invite", mail: { smtpUrl: mailbox.url, from: "berth@example.test" } });
    started.push(inviteOnly);
    const selfService = await register(inviteOnly, { email: "kim@example.test", organization_name: "Kim's" });
    expect([selfService.status, selfService.body.error]).toEqual([403, "registration_closed"]);
    expect((await invite(admin, "kim@example.test")).status).toBe(201);
    const token = invitationToken(await mailbox.latestTo("kim@example.test"));
    expect((await register(inviteOnly, { email: "kim@example.test", invitation_token: token })).status).toBe(201);

    const closed = await startControlPlane({ url: cp.url, registration: "closed", mail: { smtpUrl: mailbox.url, from: "berth@example.test" } });
    started.push(closed);
    expect((await invite(admin, "lou@example.test")).status).toBe(201);
    const louToken = invitationToken(await mailbox.latestTo("lou@example.test"));
    const refused = await register(closed, { email: "lou@example.test", invitation_token: louToken });
    expect([refused.status, refused.body.error]).toEqual([403, "registration_closed"]);
    expect((await register(closed, { email: "lou@example.test", organization_name: "Lou" })).status).toBe(403);
    // An existing account still accepts there.
    const existing = await addPerson(closed.app, "outsider", { organizationId: d.organization_id });
    expect((await invite(owner, existing.email)).status).toBe(201);
    const t = invitationToken(await mailbox.latestTo(existing.email));
    expect((await existing.api.post("/invitations/accept", { token: t })).status).toBe(200);
  });
});
