// Add-on repositories across the agent link: the deploy command carries the environment's
// repositories, the agent's command.result reports the commit each got, the deployment
// records it (extra_data.addons), and a rollback to that deployment sends exactly those
// commits although the branches moved on and the repositories changed since.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestImages } from "../support/real-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { demoOrganizationRecordingCommands } from "../support/demo-agent.ts";
import { waitForValue } from "../support/wait.ts";

let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  const a = cp.app.server.address() as { port: number };
  base = `http://127.0.0.1:${a.port}`;
  await useTestImages(cp);
});
afterAll(async () => cp?.close());

type Sent = { id: string; name: string; commit: string | null; ssh_private_key?: string };

describe("add-on repository commits", () => {
  it("are recorded from the agent's result and sent again by a rollback", async () => {
    const { d, stop, agent, commandFor } = await demoOrganizationRecordingCommands(cp, base);
    try {
      const rw = publicClient(cp.app, d.api_keys.org_rw);
      const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
      const env = d.environments.running;
      const own = await rw.post(`/environments/${env}/addon-repositories`, { git_url: "git@github.com:acme/env-addons.git", branch: "main", access: "deploy_key" });
      const shared = await rw.post("/addon-repositories", { git_url: "https://github.com/acme/shared.git", branch: "17.0", sub_paths: ["addons"] });
      expect([own.status, shared.status]).toEqual([201, 201]);

      const first = await rw.post(`/environments/${env}/deploy`);
      expect(first.status, JSON.stringify(first.body)).toBe(202);
      const cmd = await commandFor(first.body.task_id);
      const sent = (cmd.params as { addon_repositories: Sent[] }).addon_repositories;
      expect(sent.map((r) => [r.name, r.commit])).toEqual([
        ["env-addons", null],
        ["shared", null],
      ]);
      expect(sent[0]!.ssh_private_key).toContain("BEGIN OPENSSH PRIVATE KEY");
      const got = { [own.body.id]: "a".repeat(40), [shared.body.id]: "b".repeat(40) };
      agent.sendEvents([
        agent.event({
          kind: "command.result",
          command_id: cmd.command_id,
          ok: true,
          result: {
            container_id: "c1",
            commit: null,
            addon_repositories: [
              { id: own.body.id, level: "environment", name: "env-addons", branch: "main", commit: got[own.body.id] },
              { id: shared.body.id, level: "organization", name: "shared", branch: "17.0", commit: got[shared.body.id] },
              // Not one of this deployment's: ignored.
              { id: "00000000-0000-4000-8000-000000000000", commit: "c".repeat(40) },
            ],
          },
        }),
      ]);
      const done = await waitForValue("the deploy to succeed", async () => {
        const view = (await admin.api.get(`/deployments/${first.body.task_id}`)).body;
        return view.status === "success" ? view : undefined;
      });
      expect(done.extra_data.addons.map((a: { name: string; branch: string; commit: string }) => [a.name, a.branch, a.commit])).toEqual([
        ["env-addons", "main", got[own.body.id]],
        ["shared", "17.0", got[shared.body.id]],
      ]);
      expect(JSON.stringify(done)).not.toContain("PRIVATE KEY");

      // The repositories change; a later deploy takes the new branch, a rollback the recorded commits.
      await rw.patch(`/addon-repositories/${shared.body.id}`, { branch: "18.0" });
      const later = await rw.post(`/environments/${env}/deploy`);
      const laterCmd = await commandFor(later.body.task_id);
      expect((laterCmd.params as { addon_repositories: { branch: string; commit: string | null }[] }).addon_repositories[1]).toMatchObject({ branch: "18.0", commit: null });
      await cp.database.pool.query("update deployments set status = 'success', started_at = now(), completed_at = now() where id = $1", [later.body.task_id]);

      const rollback = await admin.api.post(`/deployments/${first.body.task_id}/rollback`);
      expect(rollback.status, JSON.stringify(rollback.body)).toBe(200);
      const back = (await commandFor(rollback.body.id)).params as { addon_repositories: (Sent & { branch: string })[] };
      expect(back.addon_repositories.map((r) => [r.name, r.branch, r.commit])).toEqual([
        ["env-addons", "main", got[own.body.id]],
        ["shared", "17.0", got[shared.body.id]],
      ]);
      // The deploy key is the repository's current one.
      expect(back.addon_repositories[0]!.ssh_private_key).toBe(sent[0]!.ssh_private_key);
    } finally {
      stop();
    }
  });
});
