// A key's cache entry past its TTL (60 s): the request that finds it is answered from it and
// has it refreshed, so a busy key never waits for the database; past twice the TTL the entry
// is gone and the next request waits for the lookup. What the refresh reads (here a plan
// changed behind the replica's back, with no notification) applies from then on.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.close();
});

async function organizationWithKey() {
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const client = publicClient(cp.app, d.api_keys.org_ro);
  expect((await client.get("/projects")).status).toBe(200);
  await cp.database.pool.query("update organizations set plan = 'free' where id = $1", [d.organization_id]);
  return client;
}

it("a stale entry answers its request and is refreshed behind it", async () => {
  const client = await organizationWithKey();
  cp.clock.advance(30_000);
  expect((await client.get("/projects")).status).toBe(200);
  cp.clock.advance(31_000);
  // Past the TTL: answered from the entry, without waiting for the lookup...
  expect((await client.get("/projects")).status).toBe(200);
  // ...which the refresh then replaces with what the database says.
  const deadline = Date.now() + 5_000;
  let next = await client.get("/projects");
  while (next.status === 200 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    next = await client.get("/projects");
  }
  expect(next.status).toBe(403);
  expect(next.body.error).toBe("plan_upgrade_required");
});

it("an entry past twice the TTL is gone: the request waits for the lookup", async () => {
  const client = await organizationWithKey();
  cp.clock.advance(121_000);
  const first = await client.get("/projects");
  expect(first.status).toBe(403);
  expect(first.body.error).toBe("plan_upgrade_required");
});
