// A staging environment refreshed from production on every push (issue 34), over real HTTP:
// the setting refresh_on_push in both APIs' environment views and PATCH; a signed push to its
// branch starts a copy from production (kind copy, trigger git_push) naming the pushed commit,
// and that commit's deploy starts once the copy succeeded; a redelivery starts nothing more.
// The setting does nothing on a development environment, and with a production never deployed
// the push deploys as usual.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson, type Person } from "../support/people.ts";
import { signedPush } from "../support/signed-push.ts";
import { urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
});
afterAll(async () => cp?.close());

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
const operationsOf = (environmentId: string) =>
  q("select id, kind, status, trigger, git_commit, extra_data from deployments where environment_id = $1 order by created_at, id", [environmentId]);

/** The demo project with a hook secret; its staging environment auto-deploys branch "staging" and refreshes on push. */
async function setUp(): Promise<{ d: DemoOrganization; admin: Person; secret: string }> {
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
  const secret = (await admin.api.post(`/projects/${d.project_id}/git-hook-secret`)).body.secret as string;
  const key = publicClient(cp.app, d.api_keys.org_rw);
  const staging = d.environments.stopped;
  expect((await key.get(`/environments/${staging}`)).body.refresh_on_push).toBe(false);
  const set = await key.patch(`/environments/${staging}`, { refresh_on_push: true });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  expect(set.body).toMatchObject({ stage: "staging", refresh_on_push: true });
  const auto = await admin.api.patch(`/projects/${d.project_id}/environments/${staging}`, { auto_deploy: true });
  expect(auto.status, JSON.stringify(auto.body)).toBe(200);
  expect(auto.body.refresh_on_push).toBe(true);
  return { d, admin, secret };
}

it("a push to the staging branch copies production first, then deploys the pushed commit; a redelivery starts nothing more", async () => {
  const { d, secret } = await setUp();
  const staging = d.environments.stopped;
  const production = d.environments.running;
  const pushed = await signedPush(urlOf(cp), secret, "staging", { message: "Fix the invoice report" });
  expect(pushed.status, JSON.stringify(pushed.body)).toBe(202);
  expect(pushed.body.deployments).toHaveLength(1);
  const copyId = pushed.body.deployments[0].deployment_id as string;
  expect(pushed.body.deployments[0]).toMatchObject({ environment_id: staging, reason: "branch" });

  const [copy] = await operationsOf(staging);
  expect(copy).toMatchObject({ id: copyId, kind: "copy", trigger: "git_push" });
  expect(copy.extra_data).toMatchObject({
    source_environment_id: production,
    backup: "fresh",
    then_deploy: { branch: "staging", commit: pushed.commit, message: "Fix the invoice report" },
    git_push: { delivery_id: pushed.delivery, commit: pushed.commit },
  });
  // Same server: production is only read (no operation of its own).
  expect(await operationsOf(production)).toEqual([]);

  // The copy succeeds (its agent's result, written as the ingest would): the pushed commit's deploy starts.
  await q("update deployments set status = 'success', completed_at = now() where id = $1", [copyId]);
  await cp.app.services.chains.run();
  const after = await operationsOf(staging);
  expect(after.map((o) => `${o.kind}:${o.trigger}`)).toEqual(["copy:git_push", "deploy:git_push"]);
  expect(after[1]).toMatchObject({ git_commit: pushed.commit, extra_data: { after_copy_id: copyId, git_push: { delivery_id: pushed.delivery } } });

  const again = await signedPush(urlOf(cp), secret, "staging", { delivery: pushed.delivery });
  expect(again.body.deliveries[0].duplicate).toBe(true);
  expect(again.body.deployments.map((x: { deployment_id: string }) => x.deployment_id)).toEqual([copyId]);
  await cp.app.services.chains.run();
  expect(await operationsOf(staging)).toHaveLength(2);
});

it("does nothing more on a development environment, nor without a deployed production: the push deploys as usual", async () => {
  const { d, admin, secret } = await setUp();
  const staging = d.environments.stopped;
  const key = publicClient(cp.app, d.api_keys.org_rw);

  // Production never deployed: nothing to copy.
  await q("update environments set status = 'pending' where id = $1", [d.environments.running]);
  const first = await signedPush(urlOf(cp), secret, "staging");
  expect((await operationsOf(staging)).map((o) => `${o.kind}:${o.git_commit}`)).toEqual([`deploy:${first.commit}`]);
  await q("update deployments set status = 'success', completed_at = now() where environment_id = $1", [staging]);
  await q("update environments set status = 'running' where id = $1", [d.environments.running]);

  // A development environment keeps the setting (shown) but a push just deploys it.
  const dev = await key.patch(`/environments/${staging}`, { stage: "development" });
  expect(dev.body).toMatchObject({ stage: "development", refresh_on_push: true });
  const second = await signedPush(urlOf(cp), secret, "staging");
  expect((await operationsOf(staging)).map((o) => o.kind)).toEqual(["deploy", "deploy"]);
  expect((await operationsOf(staging))[1].git_commit).toBe(second.commit);
  // Through the platform API it is turned off like any setting.
  const off = await admin.api.patch(`/projects/${d.project_id}/environments/${staging}`, { refresh_on_push: false });
  expect(off.status, JSON.stringify(off.body)).toBe(200);
  expect(off.body.refresh_on_push).toBe(false);
});
