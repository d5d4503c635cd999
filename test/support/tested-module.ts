// A module of a project repository with tests Odoo runs: one passing, one failing and one
// erroring test. The strict stand-in (test/images/erp/tests.c) fails a test marked
// `# stand-in: fail|error <exception line>` and prints Odoo's traceback for it.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

export const TESTED_MODULE = "shop_tests";

export const TESTS = `from odoo.tests import TransactionCase


class TestOrders(TransactionCase):

    def test_passes(self):
        self.assertTrue(True)

    def test_fails(self):
        self.assertEqual(1, 2)  # stand-in: fail AssertionError: 1 != 2

    def test_errors(self):
        raise ValueError("boom")  # stand-in: error ValueError: boom
`;

/** Writes the module into the repository's working tree at `repoDir` (not committed). */
export async function writeTestedModule(repoDir: string): Promise<void> {
  await mkdir(path.join(repoDir, TESTED_MODULE, "tests"), { recursive: true });
  await writeFile(path.join(repoDir, TESTED_MODULE, "__manifest__.py"), "{'name': 'Shop tests', 'version': '1.0', 'depends': ['base'], 'license': 'LGPL-3'}\n");
  await writeFile(path.join(repoDir, TESTED_MODULE, "__init__.py"), "");
  await writeFile(path.join(repoDir, TESTED_MODULE, "tests", "__init__.py"), "from . import test_orders\n");
  await writeFile(path.join(repoDir, TESTED_MODULE, "tests", "test_orders.py"), TESTS);
}

/** What Odoo's test run of the module reports (odoo/tests/result.py), as a deployment's `tests` shows it. */
export const EXPECTED_TESTS = {
  run: 3,
  failed: 1,
  errors: 1,
  failures: [
    {
      test: "TestOrders.test_errors",
      module: "shop_tests",
      kind: "error",
      traceback: ["Traceback (most recent call last):", '  File "/mnt/extra-addons/shop_tests/tests/test_orders.py", line 13, in test_errors', '    raise ValueError("boom")', "ValueError: boom"],
    },
    {
      test: "TestOrders.test_fails",
      module: "shop_tests",
      kind: "failure",
      traceback: ["Traceback (most recent call last):", '  File "/mnt/extra-addons/shop_tests/tests/test_orders.py", line 10, in test_fails', "    self.assertEqual(1, 2)", "AssertionError: 1 != 2"],
    },
  ],
};
