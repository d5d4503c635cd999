import { describe, expect, it } from "vitest";
import { moduleTestLog, testOptions, testsPassed, testsSummary } from "./module-tests.ts";

// Odoo 17.0's output of `odoo -i sale_extra --test-enable --test-tags /sale_extra --stop-after-init`
// with one passing, one failing and one erroring test: odoo/tests/result.py startTest and
// logError (the traceback is the same record, its lines without Odoo's prefix),
// odoo/modules/loading.py's per-module line, odoo/tests/result.py log_stats and the
// report odoo/service/server.py logs before it stops.
const RUN = `2026-12-07 14:58:11,734 1 INFO prod odoo.modules.loading: Loading module sale_extra (2/2)
2026-12-07 14:58:11,745 1 INFO prod odoo.addons.sale_extra.tests.test_orders: Starting TestOrders.test_errors ...
2026-12-07 14:58:11,745 1 INFO prod odoo.addons.sale_extra.tests.test_orders: ======================================================================
2026-12-07 14:58:11,745 1 ERROR prod odoo.addons.sale_extra.tests.test_orders: ERROR: TestOrders.test_errors
Traceback (most recent call last):
  File "/mnt/extra-addons/sale_extra/tests/test_orders.py", line 13, in test_errors
    raise ValueError("boom")
ValueError: boom

2026-12-07 14:58:11,745 1 INFO prod odoo.addons.sale_extra.tests.test_orders: Starting TestOrders.test_fails ...
2026-12-07 14:58:11,745 1 INFO prod odoo.addons.sale_extra.tests.test_orders: ======================================================================
2026-12-07 14:58:11,745 1 ERROR prod odoo.addons.sale_extra.tests.test_orders: FAIL: TestOrders.test_fails
Traceback (most recent call last):
  File "/mnt/extra-addons/sale_extra/tests/test_orders.py", line 10, in test_fails
    self.assertEqual(1, 2)
AssertionError: 1 != 2

2026-12-07 14:58:11,745 1 INFO prod odoo.addons.sale_extra.tests.test_orders: Starting TestOrders.test_passes ...
2026-12-07 14:58:11,745 1 ERROR prod odoo.modules.loading: Module sale_extra: 1 failures, 1 errors of 3 tests
2026-12-07 14:58:11,758 1 INFO prod odoo.tests.stats: sale_extra: 3 tests 0.00s 0 queries
2026-12-07 14:58:11,759 1 ERROR prod odoo.tests.result: 1 failed, 1 error(s) of 3 tests when loading database 'prod'
2026-12-07 14:58:11,759 1 INFO prod odoo.service.server: Initiating shutdown`;

function parse(text: string) {
  const log = moduleTestLog();
  for (const line of text.split("\n")) log.line(line);
  return log;
}

describe("module tests from Odoo's log", () => {
  it("reads the report, each failing test's name, module, kind and traceback", () => {
    const log = parse(RUN);
    expect(log.reported()).toBe(true);
    const result = log.result();
    expect(result).toEqual({
      run: 3,
      failed: 1,
      errors: 1,
      failures: [
        {
          test: "TestOrders.test_errors",
          module: "sale_extra",
          kind: "error",
          traceback: [
            "Traceback (most recent call last):",
            '  File "/mnt/extra-addons/sale_extra/tests/test_orders.py", line 13, in test_errors',
            '    raise ValueError("boom")',
            "ValueError: boom",
          ],
        },
        {
          test: "TestOrders.test_fails",
          module: "sale_extra",
          kind: "failure",
          traceback: [
            "Traceback (most recent call last):",
            '  File "/mnt/extra-addons/sale_extra/tests/test_orders.py", line 10, in test_fails',
            "    self.assertEqual(1, 2)",
            "AssertionError: 1 != 2",
          ],
        },
      ],
    });
    expect(testsPassed(result)).toBe(false);
    expect(testsSummary(result)).toBe("3 test(s): 1 failed, 1 error(s) (TestOrders.test_errors, TestOrders.test_fails)");
  });

  it("a passing run: Odoo's INFO report, nothing failed", () => {
    const log = parse(
      [
        "2026-12-07 14:58:11,745 1 INFO prod odoo.addons.m.tests.test_a: Starting TestA.test_one ...",
        "2026-12-07 14:58:11,759 1 INFO prod odoo.tests.result: 0 failed, 0 error(s) of 1 tests when loading database 'prod'",
      ].join("\n"),
    );
    expect(log.reported()).toBe(true);
    expect(log.result()).toEqual({ run: 1, failed: 0, errors: 0, failures: [] });
    expect(testsPassed(log.result())).toBe(true);
  });

  it("a run whose modules failed to load has no report: not a test result to trust", () => {
    // odoo/service/server.py preload_registries: the registry failed, rc -1, no report logged.
    const log = parse(
      [
        "2026-12-07 14:58:11,745 1 INFO prod odoo.addons.m.tests.test_a: Starting TestA.test_one ...",
        "2026-12-07 14:58:11,800 1 CRITICAL prod odoo.service.server: Failed to initialize database `prod`.",
        "Traceback (most recent call last):",
        "ValueError: broken",
      ].join("\n"),
    );
    expect(log.reported()).toBe(false);
    expect(log.result()).toMatchObject({ run: 1, failed: 0, errors: 0 });
  });

  it("a class-level error is logged by unittest's logger: the module comes from the description", () => {
    const log = parse(
      [
        "2026-12-07 14:58:11,745 1 ERROR prod unittest.suite: ERROR: setUpClass (odoo.addons.stock_x.tests.test_moves.TestMoves)",
        "Traceback (most recent call last):",
        "psycopg2.errors.UndefinedTable: relation \"x\" does not exist",
        "2026-12-07 14:58:11,759 1 ERROR prod odoo.tests.result: 0 failed, 1 error(s) of 0 tests when loading database 'prod'",
      ].join("\n"),
    );
    expect(log.result().failures).toEqual([
      { test: "setUpClass (odoo.addons.stock_x.tests.test_moves.TestMoves)", module: "stock_x", kind: "error", traceback: ["Traceback (most recent call last):", 'psycopg2.errors.UndefinedTable: relation "x" does not exist'] },
    ]);
  });

  it("keeps a long traceback's last lines (the exception is at the end)", () => {
    const frames = Array.from({ length: 100 }, (_, i) => `  File "x.py", line ${i}, in f`);
    const log = parse(["2026-12-07 14:58:11,745 1 ERROR prod odoo.addons.m.tests.t: FAIL: T.test", "Traceback (most recent call last):", ...frames, "AssertionError: no"].join("\n"));
    const tb = log.result().failures[0]!.traceback;
    expect(tb).toHaveLength(60);
    expect(tb.at(-1)).toBe("AssertionError: no");
  });

  it("asks Odoo for the tests of the given modules only (tag_selector.py's /module)", () => {
    expect(testOptions(["a", "b_c"])).toEqual(["--test-enable", "--test-tags=/a,/b_c"]);
    expect(testOptions([])).toEqual([]);
  });
});
