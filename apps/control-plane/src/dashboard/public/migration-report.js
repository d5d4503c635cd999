// What a migration's page reads out: the analysis of the backup as a report, and the 12
// steps of a running migration with their states.
import { fmt, h } from "./dom.js";

/** A sum in the platform's currency (the API gives no currency code: two decimals, no symbol). */
const money = (n) => (n === null || n === undefined ? "–" : n.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }));

function facts(label, rows) {
  return h("dl", { class: "facts", "aria-label": label }, rows.filter(Boolean).flatMap(([dt, dd]) => [h("dt", {}, dt), h("dd", {}, dd)]));
}

function moduleList(title, names, kind) {
  return h(
    "div",
    { class: "module-list" },
    h("h4", {}, `${title} (${names.length})`),
    names.length ? h("ul", { class: `modules modules-${kind}`, "aria-label": title }, names.map((n) => h("li", {}, n))) : h("p", { class: "muted" }, "none"),
  );
}

/**
 * What the target must have for this backup (the analysis' `requirements`, compared with the
 * target now: PostgreSQL major, Enterprise add-ons), each met or not with the API's words; the
 * start is refused while one is not met, so the report says so before anyone presses Start.
 */
function requirementsList(requirements) {
  if (requirements.length === 0) return null;
  const unmet = requirements.filter((r) => !r.met).length;
  return h(
    "div",
    { class: `migration-requirements${unmet ? " secret" : ""}` },
    h("h3", {}, "What the migration needs"),
    unmet ? h("p", { class: "requirements-unmet" }, `${unmet === 1 ? "One requirement is" : `${unmet} requirements are`} not met: the migration cannot start until ${unmet === 1 ? "it is" : "they are"}.`) : null,
    h(
      "ul",
      { "aria-label": "Requirements" },
      requirements.map((r) =>
        h(
          "li",
          { class: `requirement requirement-${r.met ? "met" : "unmet"}`, dataset: { code: r.code } },
          h("span", { class: "step-mark", "aria-hidden": "true" }, r.met ? "✓" : "✗"),
          h("span", { class: "visually-hidden" }, r.met ? "Met: " : "Not met: "),
          ` ${r.message}`,
        ),
      ),
    ),
  );
}

/** The analysis (GET analysis) as a report: what the backup holds, what it needs, what it costs. */
export function analysisReport(a) {
  const warnings = Array.isArray(a.warnings) ? a.warnings : [];
  const requirements = Array.isArray(a.requirements) ? a.requirements : [];
  return h(
    "section",
    { class: "card analysis-report", "aria-labelledby": "analysis-h" },
    h("h2", { id: "analysis-h" }, "Analysis of the backup"),
    h(
      "div",
      { class: "report-grid" },
      h(
        "div",
        {},
        h("h3", {}, "What the backup holds"),
        facts("Backup contents", [
          ["ERP version", a.erp_version],
          a.postgres_version ? ["PostgreSQL version", a.postgres_version] : null,
          a.database_name ? ["Database", a.database_name] : null,
          ["Database size", fmt.bytes(a.database_size_bytes)],
          ["File store size", fmt.bytes(a.filestore_size_bytes)],
          ["Total size", fmt.bytes(a.total_size_bytes)],
          ["Users", String(a.user_count)],
          ["Partners", String(a.partner_count)],
          ["Modules", String(a.total_modules)],
        ]),
      ),
      h(
        "div",
        {},
        h("h3", {}, "Recommended server share"),
        facts("Recommendation", [
          ["CPU", `${a.recommended_cpu} ${a.recommended_cpu === 1 ? "core" : "cores"}`],
          ["RAM", `${fmt.gbFromMb(a.recommended_ram_mb)} GB`],
          ["Disk", `${a.recommended_disk_gb} GB`],
        ]),
        h("h3", {}, "Cost per month"),
        facts("Cost comparison", [
          ["Estimated on your server", money(a.estimated_monthly_cost)],
          ["Vendor equivalent", money(a.vendor_equivalent_cost)],
          ["Savings", h("strong", { class: "savings" }, money(a.monthly_savings))],
        ]),
      ),
    ),
    requirementsList(requirements),
    h("div", { class: "report-grid" }, moduleList("Standard modules", a.standard_modules, "standard"), moduleList("Custom modules", a.custom_modules, "custom")),
    warnings.length ? h("div", { class: "secret analysis-warnings" }, h("h3", {}, "Warnings"), h("ul", {}, warnings.map((w) => h("li", {}, w)))) : null,
  );
}

/** The 12 execution steps in order, for a record that does not carry `steps` yet. */
export const STEP_NAMES = [
  ["creating_project", "Creating project"],
  ["creating_environment", "Creating environment"],
  ["deploying_containers", "Deploying containers"],
  ["downloading_backup", "Downloading backup"],
  ["extracting_backup", "Extracting backup archive"],
  ["restoring_database", "Restoring database"],
  ["restoring_filestore", "Restoring filestore"],
  ["cloning_repository", "Cloning Git repository"],
  ["configuring_routing", "Configuring routing"],
  ["restarting_container", "Restarting container"],
  ["verifying_health", "Verifying deployment health"],
  ["completed", "Migration complete"],
];

const MARK = { completed: "✓", running: "▶", failed: "✗", skipped: "–", pending: "·" };

/** The steps as a list with their states, and the progress bar of the whole run. */
export function stepsSection(m) {
  const steps = Array.isArray(m.steps) && m.steps.length ? m.steps : null;
  const pct = m.progress_percent ?? 0;
  return h(
    "section",
    { class: "card migration-steps", "aria-labelledby": "steps-h" },
    h("h2", { id: "steps-h" }, "Progress"),
    h("div", { class: "upload-progress" }, h("progress", { max: "100", value: String(pct), "aria-label": "Migration progress" }), h("span", { id: "migration-percent" }, ` ${pct} %`)),
    steps
      ? h(
          "ol",
          { class: "steps", "aria-label": "Steps" },
          steps.map((s) =>
            h(
              "li",
              { class: `step step-${s.status}`, dataset: { step: s.id } },
              h("span", { class: "step-mark", "aria-hidden": "true" }, MARK[s.status] ?? "·"),
              ` ${s.name} `,
              h("span", { class: "step-status" }, `(${s.status})`),
            ),
          ),
        )
      : h("p", { class: "muted" }, m.current_step ? `Current step: ${STEP_NAMES.find(([id]) => id === m.current_step)?.[1] ?? m.current_step}` : "Waiting for the first step."),
  );
}
