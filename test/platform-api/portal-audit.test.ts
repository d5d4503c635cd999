// Portal administrators reach every organisation through the ordinary platform routes; each
// such request is written to that organisation's audit log for its owners to read (security
// finding 5), and nobody else's requests are.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let other: DemoOrganization;
let owner: Person;
let otherOwner: Person;
let staff: Person;

beforeAll(async () => {
  cp = await startControlPlane();
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  other = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  otherOwner = await addPerson(cp.app, "org_owner", { organizationId: other.organization_id });
  staff = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id });
});
afterAll(async () => cp?.close());

interface Entry {
  actor: { id: string } | null;
  action: string;
  target: { type: string; id: string };
  result: { state: string; summary: string };
}
const auditOf = async (p: Person, orgId: string): Promise<Entry[]> => {
  const res = await p.api.get(`/organizations/${orgId}/audit-log?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data as Entry[];
};

describe("a portal administrator's requests in a customer's organisation", () => {
  it("are in that organisation's audit log: who, method and path, and how they ended", async () => {
    const path = `/api/v1/projects/${d.project_id}/environments/${d.environments.running}`;
    const changed = await staff.api.patch(`/projects/${d.project_id}/environments/${d.environments.running}`, { auto_deploy: true });
    expect(changed.status).toBe(200);
    const read = await staff.api.get(`/organizations/${d.organization_id}/members`);
    expect(read.status).toBe(200);
    const refused = await staff.api.post("/deployments", { project_id: d.project_id, environment_id: d.environments.running, git_branch: "bad branch;rm" });
    expect(refused.status).toBe(400); // the schema refuses it before any access check: nothing was done in the organisation

    const entries = (await auditOf(owner, d.organization_id)).filter((e) => e.actor?.id === staff.userId);
    expect(entries).toContainEqual(
      expect.objectContaining({ action: "portal.patch", target: expect.objectContaining({ type: "request", id: `PATCH ${path}` }), result: { state: "succeeded", summary: "HTTP 200" } }),
    );
    expect(entries).toContainEqual(expect.objectContaining({ action: "portal.get", target: expect.objectContaining({ id: `GET /api/v1/organizations/${d.organization_id}/members` }) }));
    expect(entries.some((e) => e.target.id.startsWith("POST /api/v1/deployments"))).toBe(false);
  });

  it("are audited when refused too, and only in the organisation they touched", async () => {
    const body = { project_id: other.project_id, environment_id: other.environments.stopped, git_branch: "main" };
    expect((await staff.api.post("/deployments", body)).status).toBe(201);
    const busy = await staff.api.post("/deployments", body);
    expect(busy.status).toBe(409);
    const missing = await staff.api.post("/deployments/00000000-0000-4000-8000-000000000000/retry");
    expect(missing.status).toBe(404); // no such deployment: no organisation was acted in

    const theirs = (await auditOf(otherOwner, other.organization_id)).filter((e) => e.target.id === "POST /api/v1/deployments");
    expect(theirs.map((e) => [e.action, e.actor?.id, e.result])).toEqual([
      ["portal.post", staff.userId, { state: "refused", summary: "HTTP 409" }],
      ["portal.post", staff.userId, { state: "succeeded", summary: "HTTP 201" }],
    ]);
    const first = await auditOf(owner, d.organization_id);
    expect(first.some((e) => e.target.id === "POST /api/v1/deployments" || e.target.id.includes("/retry"))).toBe(false);
  });

  it("owners' and members' own requests are not written there", async () => {
    expect((await owner.api.patch(`/projects/${d.project_id}/environments/${d.environments.stopped}`, { auto_deploy: true })).status).toBe(200);
    const entries = await auditOf(owner, d.organization_id);
    expect(entries.some((e) => e.actor?.id === owner.userId)).toBe(false);
  });
});
