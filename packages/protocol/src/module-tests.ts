// The module tests of a deploy: what the deploy command asks for (DeployParams.tests) and
// what the agent reports (the deploy result's `tests`), stored with the deployment and shown
// by both APIs, the dashboard, `berth deploy --follow` and the deployment.completed webhook.
import { Type, type Static } from "typebox";

/**
 * Run the tests of the modules a deploy installs or upgrades (`--test-enable`,
 * `--test-tags /<module>,…`), in the one-off container that installs them, before the switch.
 * Absent: no tests run (production environments, and staging ones not set to require them).
 */
export const DeployTests = Type.Object(
  {
    /** Also install the project repository's modules that are not installed yet (a development build). */
    install_new_modules: Type.Boolean(),
    /** A test that fails makes the deploy fail before the switch (rolled back: the old release keeps serving). */
    require_passing: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type DeployTests = Static<typeof DeployTests>;

/** One test that did not pass, as Odoo logged it (odoo/tests/result.py logError). */
export const TestFailure = Type.Object({
  /** `<Class>.<method>` as Odoo names it. */
  test: Type.String(),
  module: Type.String(),
  /** failure: an assertion failed (FAIL); error: the test raised (ERROR). */
  kind: Type.Union([Type.Literal("failure"), Type.Literal("error")]),
  /** Odoo's traceback lines, the exception last (at most the last 60). */
  traceback: Type.Array(Type.String()),
});
export type TestFailure = Static<typeof TestFailure>;

export const TestsResult = Type.Object({
  run: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  errors: Type.Integer({ minimum: 0 }),
  /** At most 100; failures_left_out counts the others. */
  failures: Type.Array(TestFailure),
  failures_left_out: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type TestsResult = Static<typeof TestsResult>;
