// A development build's module tests: the options that run them with the module install
// (--test-enable and --test-tags per module, odoo/tests/tag_selector.py), and what Odoo's
// own log says of them, read as it streams. Odoo 16.0-19.0 print (the stand-in's
// test/images/erp/tests.c prints the same):
//   odoo/tests/result.py OdooTestResult.startTest:  INFO <test's logger>: Starting <Class>.<method> ...
//   OdooTestResult.logError:                       ERROR <test's logger>: FAIL: <Class>.<method>   (or ERROR:)
//                                                  then the traceback, lines without Odoo's prefix
//   odoo/service/server.py run (--stop-after-init): <level> odoo.tests.result: <F> failed, <E> error(s) of <T> tests when loading database '<db>'
// and preload_registries adds 1 to the exit code when a test failed (rc += 1), once every
// module is loaded and committed: exit code 1 with that report and no loading failure is a
// run whose modules are in place and whose tests did not all pass. The log, not the exit
// code, tells the two apart.
import type { TestsResult } from "@berth/protocol";

export type { TestsResult, TestFailure } from "@berth/protocol";

/** Most failing tests kept, and most traceback lines kept per test (the last ones: the exception is at the end). */
export const MAX_FAILURES = 100;
export const MAX_TRACEBACK_LINES = 60;
const MAX_LINE_CHARS = 1000;

/** Odoo's log line: `<date> <time>,<ms> <pid> <LEVEL> <db> <logger>: <message>` (odoo/netsvc.py's format). */
const ODOO_LINE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} \d+ ([A-Z]+) \S+ ([\w.]+): (.*)$/;
const TEST_LOGGER = /^odoo\.addons\.(\w+)\.tests(?:\.|$)/;
const REPORT = /^(\d+) failed, (\d+) error\(s\) of (\d+) tests when loading database /;
/** Odoo's fatal start failure (odoo/service/server.py preload_registries): the modules did not load. */
const LOAD_FAILED = /^Failed to initialize database /;

/** --test-tags for these modules: `/<module>` each (tag_selector.py: any tag of that module). */
export function testTags(modules: readonly string[]): string {
  return modules.map((m) => `/${m}`).join(",");
}

/** The options that run the tests of `modules` in a -i/-u run; none for no module. */
export function testOptions(modules: readonly string[]): string[] {
  return modules.length === 0 ? [] : ["--test-enable", `--test-tags=${testTags(modules)}`];
}

export function moduleTestLog() {
  let started = 0;
  let report: { run: number; failed: number; errors: number } | null = null;
  let loadFailed = false;
  const failures: TestsResult["failures"] = [];
  let open: TestsResult["failures"][number] | null = null;
  let dropped = 0;

  const close = () => {
    if (open === null) return;
    while (open.traceback.length > 0 && open.traceback.at(-1)!.trim() === "") open.traceback.pop();
    open = null;
  };

  return {
    line(text: string): void {
      const odoo = ODOO_LINE.exec(text);
      if (odoo === null) {
        // A line without Odoo's prefix continues the record before it: a failure's traceback.
        if (open !== null) {
          open.traceback.push(text.slice(0, MAX_LINE_CHARS));
          if (open.traceback.length > MAX_TRACEBACK_LINES) open.traceback.shift();
        }
        return;
      }
      close();
      const [, level, logger, message] = odoo as unknown as [string, string, string, string];
      const testModule = TEST_LOGGER.exec(logger)?.[1] ?? null;
      if (testModule !== null && level === "INFO" && /^Starting .+ \.\.\.$/.test(message)) started++;
      const failed = level === "ERROR" ? /^(FAIL|ERROR): (.+)$/.exec(message) : null;
      if (failed !== null) {
        // A class-level error (setUpClass) is logged by unittest's own logger: its description names the module.
        const module = testModule ?? /\(odoo\.addons\.(\w+)\./.exec(failed[2]!)?.[1] ?? "";
        const entry = { test: failed[2]!.slice(0, MAX_LINE_CHARS), module, kind: failed[1] === "FAIL" ? ("failure" as const) : ("error" as const), traceback: [] };
        if (failures.length < MAX_FAILURES) {
          failures.push(entry);
          open = entry;
        } else dropped++;
      }
      const summary = logger === "odoo.tests.result" ? REPORT.exec(message) : null;
      if (summary !== null) report = { failed: Number(summary[1]), errors: Number(summary[2]), run: Number(summary[3]) };
      if (level === "CRITICAL" && LOAD_FAILED.test(message)) loadFailed = true;
    },
    /** Odoo reported its tests (the run got past loading every module). */
    reported: (): boolean => report !== null && !loadFailed,
    /** The tests' result: Odoo's report, else what was seen (a run that ended early). */
    result(): TestsResult {
      close();
      const counted = { run: started, failed: failures.filter((f) => f.kind === "failure").length, errors: failures.filter((f) => f.kind === "error").length };
      return { ...(report ?? counted), failures, ...(dropped > 0 ? { failures_left_out: dropped } : {}) };
    },
  };
}
export type ModuleTestLog = ReturnType<typeof moduleTestLog>;

/** Every test passed (none failed, none errored). */
export function testsPassed(result: TestsResult): boolean {
  return result.failed === 0 && result.errors === 0;
}

/** One line for logs and errors: "3 tests: 1 failed, 1 error(s) (TestX.test_b, TestX.test_c)". */
export function testsSummary(result: TestsResult): string {
  const names = result.failures.slice(0, 5).map((f) => f.test);
  const more = result.failures.length - names.length + (result.failures_left_out ?? 0);
  return `${result.run} test(s): ${result.failed} failed, ${result.errors} error(s)${names.length > 0 ? ` (${names.join(", ")}${more > 0 ? `, ${more} more` : ""})` : ""}`;
}
