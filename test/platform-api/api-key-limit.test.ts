// Keys cannot be minted without end to multiply the per-key rate budgets (security finding
// 11): an organisation holds at most 50 active API keys, also when creations race.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let admin: Person;

beforeAll(async () => {
  cp = await startControlPlane();
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
});
afterAll(async () => {
  await cp?.close();
});

const create = (name: string) => admin.api.post(`/organizations/${d.organization_id}/api-keys`, { name, access: "read_only" });

it("the 51st active key is refused with api_key_limit_reached until one is revoked; racing creations never pass 50", async () => {
  const scope = { organizationId: d.organization_id, projectId: null };
  const active = async () => (await cp.database.pool.query("select count(*)::int as n from api_keys where organization_id = $1 and revoked_at is null", [d.organization_id])).rows[0].n as number;
  const existing = await active();
  // Up to 45, then ten at once: exactly five of them get in.
  for (let i = existing; i < 45; i++) expect((await create(`k${i}`)).status).toBe(201);
  const raced = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`race${i}`)));
  expect(raced.filter((r) => r.status === 201)).toHaveLength(5);
  expect(raced.filter((r) => r.status === 409).every((r) => r.body.error === "api_key_limit_reached")).toBe(true);
  expect(await active()).toBe(50);

  const refused = await create("one too many");
  expect(refused.status).toBe(409);
  expect(refused.body.error).toBe("api_key_limit_reached");

  const victim = raced.find((r) => r.status === 201)!.body.id as string;
  await cp.app.services.apiKeys.revoke(scope, victim);
  expect((await create("after a revocation")).status).toBe(201);
});
