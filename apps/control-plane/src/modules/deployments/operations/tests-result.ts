// A deploy's module tests (issue 34, development builds): as its agent reports them in the
// deploy result (`tests`, @berth/protocol module-tests.ts), kept in deployments.tests_result
// in that shape only, and shown as the deployment's `tests` by both APIs (and in the
// deployment.completed webhook, webhook-payload.ts).
import { Type } from "typebox";
import type { TestFailure, TestsResult } from "@berth/protocol";
import { Nullable } from "../../../lib/http-schemas.ts";

const MAX_FAILURES = 100;
const MAX_TRACEBACK_LINES = 60;
const MAX_TEXT = 1000;

export const TestsResultField = Nullable(
  Type.Object(
    {
      run: Type.Integer({ minimum: 0, description: "Tests run" }),
      failed: Type.Integer({ minimum: 0, description: "Tests whose assertion failed" }),
      errors: Type.Integer({ minimum: 0, description: "Tests that raised an error" }),
      failures: Type.Array(
        Type.Object({
          test: Type.String({ description: "<Class>.<method>, as Odoo names it" }),
          module: Type.String({ description: "The module the test belongs to" }),
          kind: Type.Union([Type.Literal("failure"), Type.Literal("error")], { description: "failure: an assertion failed (FAIL); error: the test raised (ERROR)" }),
          traceback: Type.Array(Type.String(), { description: "Odoo's traceback lines, the exception last (at most the last 60)" }),
        }),
        { description: "Each test that did not pass (at most 100; failures_left_out counts the others)" },
      ),
      failures_left_out: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    {
      description:
        "The tests of the modules this deploy installed or upgraded (Odoo's --test-enable --test-tags, in the one-off container that installs them, before the switch): " +
        "run by every development environment's deploy (which serves even when tests fail) and by a staging environment's with require_passing_tests (refused when one fails). " +
        "null: no tests ran (production never runs them).",
    },
  ),
);

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

function text(v: unknown): string | null {
  return typeof v === "string" ? v.slice(0, MAX_TEXT) : null;
}

/** The agent's report, kept only in the documented shape (null: none, or not that shape). */
export function reportedTests(value: unknown): TestsResult | null {
  if (typeof value !== "object" || value === null) return null;
  const o = value as Record<string, unknown>;
  const run = count(o.run);
  const failed = count(o.failed);
  const errors = count(o.errors);
  if (run === null || failed === null || errors === null || !Array.isArray(o.failures)) return null;
  const failures: TestFailure[] = o.failures.slice(0, MAX_FAILURES).flatMap((f: unknown) => {
    const t = (f ?? {}) as Record<string, unknown>;
    const test = text(t.test);
    const module = text(t.module);
    if (test === null || module === null || (t.kind !== "failure" && t.kind !== "error") || !Array.isArray(t.traceback)) return [];
    return [{ test, module, kind: t.kind, traceback: t.traceback.slice(-MAX_TRACEBACK_LINES).flatMap((l) => (typeof l === "string" ? [l.slice(0, MAX_TEXT)] : [])) }];
  });
  const left = count(o.failures_left_out) ?? 0;
  const leftOut = left + Math.max(0, o.failures.length - MAX_FAILURES);
  return { run, failed, errors, failures, ...(leftOut > 0 ? { failures_left_out: leftOut } : {}) };
}

/** The stored result as the APIs show it. */
export function testsView(stored: unknown): TestsResult | null {
  return reportedTests(stored);
}
