// A deployment's module tests on its page (development builds, and staging deploys that
// require passing tests): the counts, then each test that did not pass with Odoo's
// traceback, folded. The deployment's `tests` carries them (null: none ran).
import { h } from "./dom.js";

/** Fills `section` with `tests` (hidden when none ran); returns it. */
export function paintTests(section, tests) {
  section.hidden = !tests;
  if (!tests) {
    section.replaceChildren();
    return section;
  }
  const passed = tests.failed === 0 && tests.errors === 0;
  section.replaceChildren(
    h("h2", { id: "tests-h" }, "Tests"),
    h("p", { class: passed ? "" : "error-text", id: "tests-summary" }, `${tests.run} run, ${tests.failed} failed, ${tests.errors} error(s)`),
    tests.failures.length > 0
      ? h(
          "ul",
          { class: "test-failures", "aria-label": "Tests that did not pass" },
          ...tests.failures.map((f) =>
            h("li", {}, h("details", {}, h("summary", {}, `${f.kind === "failure" ? "FAIL" : "ERROR"} ${f.module}: ${f.test}`), h("pre", { class: "traceback" }, f.traceback.join("\n")))),
          ),
        )
      : null,
    tests.failures_left_out ? h("p", {}, `… and ${tests.failures_left_out} more`) : null,
  );
  return section;
}
