// `berth retry` and `berth rollback` with an API key (a CI job) against a real control plane:
// the public API's retry and rollback, their action answer with --json, and a refusal's code.
import { expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { json, withApiKey } from "../support/cli-people.ts";

const s = cliSuite();

/** A deploy of the running environment that ended with `status`. */
async function finishedDeploy(status: "failed" | "success"): Promise<string> {
  const row = await s.cp.app.services.deployments.requestAction({ organizationId: s.d.organization_id, projectId: null }, s.d.environments.running, "deploy", {
    userId: null,
    apiKeyId: null,
  });
  await s.cp.database.pool.query("update deployments set status = $2, completed_at = now() where id = $1", [row.id, status]);
  return row.id;
}

it("retry of a failed deployment with an API key starts a new task (--json: the action answer); rollback to it is refused with exit 1", async () => {
  const key = withApiKey(s, s.d.api_keys.org_rw);
  const failed = await finishedDeploy("failed");

  const refused = await key(["rollback", failed]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("not_rollback_target");

  const answer = await json<{ task_id: string; status: string; environment_id: string; poll_url: string }>(key, ["retry", failed]);
  expect(answer).toEqual({ task_id: expect.any(String), status: "queued", environment_id: s.d.environments.running, poll_url: `/api/public/v1/deployments/${answer.task_id}` });
  const { rows } = await s.cp.database.pool.query("select kind, extra_data from deployments where id = $1", [answer.task_id]);
  expect(rows[0]).toMatchObject({ kind: "deploy", extra_data: { retry_of: failed } });
});
