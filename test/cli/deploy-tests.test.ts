// `berth deploy --follow` (and `berth logs --follow`, the same follow) against a real
// control plane, on a deployment that recorded module tests: when it ends, the CLI prints the
// counts and each test that did not pass with Odoo's traceback, signed in (platform API)
// and with an API key (public API); --json carries them in the result's deployment.
import { expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { signedInPerson, withApiKey } from "../support/cli-people.ts";
import { RECORDED_TESTS } from "../support/recorded-tests.ts";

const s = cliSuite();

/** A development build of the running environment that succeeded with failing tests, as the agent's result recorded it. */
async function testedDeploy(): Promise<string> {
  const row = await s.cp.app.services.deployments.requestAction({ organizationId: s.d.organization_id, projectId: null }, s.d.environments.running, "deploy", {
    userId: null,
    apiKeyId: null,
  });
  await s.cp.database.pool.query("update deployments set status = 'success', started_at = now(), completed_at = now(), tests_result = $2 where id = $1", [
    row.id,
    JSON.stringify(RECORDED_TESTS),
  ]);
  return row.id;
}

const SUMMARY = [
  "✗ Tests: 3 run, 1 failed, 1 error(s)",
  "  ERROR shop_tests: TestOrders.test_errors",
  "      Traceback (most recent call last):",
  '        File "/mnt/extra-addons/shop_tests/tests/test_orders.py", line 13, in test_errors',
  '          raise ValueError("boom")',
  "      ValueError: boom",
  "  FAIL shop_tests: TestOrders.test_fails",
];

it("prints the tests' counts and each failing test's traceback when the followed deployment ends, with either API", async () => {
  const id = await testedDeploy();
  for (const run of [await signedInPerson(s), withApiKey(s, s.d.api_keys.org_rw)]) {
    const followed = await run(["logs", id, "--follow"]);
    expect(followed.code, followed.stderr).toBe(0);
    const lines = followed.stdout.split("\n").map((l) => l.trimEnd());
    const at = lines.indexOf(SUMMARY[0]!);
    expect(at, followed.stdout).toBeGreaterThanOrEqual(0);
    expect(lines.slice(at, at + SUMMARY.length)).toEqual(SUMMARY);
    expect(lines).toContain("      AssertionError: 1 != 2");
    expect(followed.stdout).toContain(`✓ Deployment ${id} succeeded`);

    const json = await run(["logs", id, "--follow", "--json"]);
    const result = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as { type: string; deployment?: { tests?: unknown } }).find((e) => e.type === "result");
    expect(result?.deployment?.tests).toEqual(RECORDED_TESTS);
  }
});
