// What a development build's deployment recorded of its module tests, as the agent reads
// Odoo's output (one erroring and one failing test of three, with Odoo's tracebacks): for the
// tests of what the CLI and the dashboard show of it.
export const RECORDED_TESTS = {
  run: 3,
  failed: 1,
  errors: 1,
  failures: [
    { test: "TestOrders.test_errors", module: "shop_tests", kind: "error", traceback: ["Traceback (most recent call last):", '  File "/mnt/extra-addons/shop_tests/tests/test_orders.py", line 13, in test_errors', '    raise ValueError("boom")', "ValueError: boom"] },
    { test: "TestOrders.test_fails", module: "shop_tests", kind: "failure", traceback: ["Traceback (most recent call last):", '  File "/mnt/extra-addons/shop_tests/tests/test_orders.py", line 10, in test_fails', "    self.assertEqual(1, 2)", "AssertionError: 1 != 2"] },
  ],
};
