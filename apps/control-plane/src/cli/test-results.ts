// A deployment's module tests as `berth deploy --follow` (and `berth logs --follow`) prints
// them when it ends: the counts, then each test that did not pass with Odoo's traceback.
// The deployment's own object (both APIs' `tests`) carries them; --json prints that object.
import type { TestsResult } from "@berth/protocol";
import type { Output } from "./output.ts";

/** The deployment's `tests` (null: none ran, or an API that predates them). */
export function testsOf(record: unknown): TestsResult | null {
  const tests = (record as { tests?: TestsResult | null } | null)?.tests;
  return tests && typeof tests.run === "number" ? tests : null;
}

export function printTests(out: Output, tests: TestsResult | null): void {
  if (tests === null) return;
  const passed = tests.failed === 0 && tests.errors === 0;
  const head = `Tests: ${tests.run} run, ${tests.failed} failed, ${tests.errors} error(s)`;
  out.line(out.paint(passed ? "green" : "red", `${passed ? "✓" : "✗"} ${head}`));
  for (const f of tests.failures) {
    out.line(`  ${out.paint("red", f.kind === "failure" ? "FAIL" : "ERROR")} ${f.module}: ${f.test}`);
    for (const line of f.traceback) out.line(out.paint("dim", `      ${line}`));
  }
  if (tests.failures_left_out) out.line(out.paint("dim", `  … and ${tests.failures_left_out} more`));
}
