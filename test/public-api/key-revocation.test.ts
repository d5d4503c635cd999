// Keys are remembered per replica; revoking one forgets it at once on the replica that
// revoked it and, through NOTIFY, on every other replica.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

let a: TestControlPlane;
let b: TestControlPlane;
beforeAll(async () => {
  a = await startControlPlane();
  b = await startControlPlane({ url: a.url });
});
afterAll(async () => {
  await b?.stop();
  await a?.close();
});

it("a revoked key stops working on the revoking replica at once and on the other one right after", async () => {
  const d = await createDemoOrganization(a.database.db, a.app.services);
  const victim = await a.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "read_only", name: "victim", createdBy: null });
  // Both replicas have seen (and remembered) the key.
  expect((await publicClient(a.app, victim.key).get("/projects")).status).toBe(200);
  expect((await publicClient(b.app, victim.key).get("/projects")).status).toBe(200);
  expect((await publicClient(a.app, d.api_keys.org_rw).delete(`/api-keys/${victim.id}`)).status).toBe(200);
  const onA = await publicClient(a.app, victim.key).get("/projects");
  expect(onA.status).toBe(401);
  expect(onA.body.error).toBe("api_key_revoked");
  const deadline = Date.now() + 5000;
  let onB = await publicClient(b.app, victim.key).get("/projects");
  while (onB.status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    onB = await publicClient(b.app, victim.key).get("/projects");
  }
  expect(onB.status).toBe(401);
  expect(onB.body.error).toBe("api_key_revoked");
});
