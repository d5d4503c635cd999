// One deployment's page: its status, live step progress and logs, and cancelling it.
import { client, ok } from "./api.js";
import { badge, clear, fmt, h, onAction } from "./dom.js";
import { loadProjects } from "./projects.js";
import { paintTests } from "./deployment-tests.js";

const ACTIVE = new Set(["pending", "queued", "building", "deploying", "running"]);
const TERMINAL = new Set(["success", "failed", "cancelled", "destroyed", "rolled_back"]);

export async function deploymentPage(main, ctx, deploymentId) {
  const record = await ok(client.GET("/deployments/{deployment_id}", { params: { path: { deployment_id: deploymentId } } }));
  if (!ctx.current()) return;
  const projects = ctx.org ? await loadProjects(ctx).catch(() => []) : [];
  const project = projects.find((p) => p.id === record.project_id);
  const env = project?.environments.find((e) => e.id === record.environment_id);
  const statusEl = h("span", { id: "deployment-status" }, badge(record.status));
  const percent = h("span", { id: "deployment-percent" });
  const steps = h("ol", { class: "steps", "aria-label": "Steps" });
  const logs = h("ol", { class: "logs", role: "log", "aria-label": "Deployment logs", tabindex: "0" });
  const error = h("p", { class: "error-text", hidden: true });
  const tests = paintTests(h("section", { id: "deployment-tests", "aria-labelledby": "tests-h" }), record.tests);
  const cancel = h("button", { type: "button", class: "secondary", hidden: true }, "Cancel deployment");
  cancel.addEventListener(
    "click",
    onAction(cancel, ctx.showError, async () => {
      await ok(client.POST("/deployments/{deployment_id}/cancel", { params: { path: { deployment_id: deploymentId } }, body: {} }));
      ctx.announce("Deployment cancelled.");
    }),
  );
  main.append(
    h(
      "p",
      { class: "crumbs" },
      h("a", { href: "#/projects" }, "Projects"),
      env ? [" / ", h("a", { href: `#/environments/${env.id}` }, `${project.name} / ${env.name}`)] : null,
    ),
    h("h1", {}, `${record.kind[0].toUpperCase()}${record.kind.slice(1)} v${record.version}`),
    h("p", { class: "facts-line" }, "Status: ", statusEl, " · ", percent, ` · branch ${record.git_branch ?? "–"} · started ${fmt.time(record.started_at ?? record.created_at)}`),
    error,
    tests,
    h("div", { class: "actions" }, cancel),
    h("div", { class: "deploy-grid" }, h("section", { "aria-labelledby": "steps-h" }, h("h2", { id: "steps-h" }, "Steps"), steps), h("section", { "aria-labelledby": "logs-h" }, h("h2", { id: "logs-h" }, "Logs"), logs)),
  );
  const canCancel = project?.permissions.includes("project.deployments.cancel") ?? false;

  function paintRecord(status, errorMessage) {
    clear(statusEl).append(badge(status));
    cancel.hidden = !(canCancel && (status === "pending" || status === "running" || status === "queued" || status === "deploying" || status === "building"));
    error.hidden = !errorMessage;
    error.textContent = errorMessage ? `Error: ${errorMessage}` : "";
  }

  async function loadProgress() {
    const p = await ok(client.GET("/deployments/{deployment_id}/progress", { params: { path: { deployment_id: deploymentId } } }));
    if (!ctx.current()) return;
    percent.textContent = `${p.progress_percent} % done`;
    steps.replaceChildren(
      ...p.steps.map((s) =>
        h("li", { class: `step step-${s.status}`, dataset: { step: s.id } }, h("span", { class: "step-mark", "aria-hidden": "true" }, s.status === "completed" ? "✓" : s.status === "running" ? "▶" : s.status === "failed" ? "✗" : "·"), ` ${s.name} `, h("span", { class: "step-status" }, `(${s.status})`)),
      ),
    );
    paintRecord(p.status, p.error_message);
  }

  const seen = new Set();
  let pendingLines = [];
  let frame = 0;
  function addLine(l) {
    const key = String(l.id);
    if (seen.has(key)) return;
    seen.add(key);
    pendingLines.push(l);
    if (!frame) frame = requestAnimationFrame(flushLines);
  }
  function flushLines() {
    frame = 0;
    const atBottom = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 8;
    logs.append(
      ...pendingLines.map((l) =>
        h("li", { class: `log log-${l.level}` }, h("time", { datetime: l.timestamp }, fmt.clock(l.timestamp)), " ", h("span", { class: "log-level" }, l.level.toUpperCase()), " ", l.step ? h("span", { class: "log-step" }, `[${l.step}] `) : null, l.message),
      ),
    );
    pendingLines = [];
    if (atBottom) logs.scrollTop = logs.scrollHeight;
  }
  ctx.onCleanup(() => frame && cancelAnimationFrame(frame));

  // Subscribe first, then load: nothing falls between the two (lines are de-duplicated by id).
  ctx.on("deployment.log", (l) => {
    if (l.deployment_id === deploymentId) addLine(l);
  });
  let timer = 0;
  ctx.on("deployment.status", (d) => {
    if (d.deployment_id !== deploymentId) return;
    paintRecord(d.status, d.error_message);
    if (TERMINAL.has(d.status)) ctx.announce(`Deployment ${d.status}.`);
    // The tests are on the record once the deployment ends.
    if (TERMINAL.has(d.status)) void ok(client.GET("/deployments/{deployment_id}", { params: { path: { deployment_id: deploymentId } } })).then((r) => paintTests(tests, r.tests), ctx.showError);
    clearTimeout(timer);
    timer = setTimeout(() => void loadProgress().catch(ctx.showError), 150);
  });
  ctx.onCleanup(() => clearTimeout(timer));
  const [initial] = await Promise.all([ok(client.GET("/deployments/{deployment_id}/logs", { params: { path: { deployment_id: deploymentId }, query: { limit: 500 } } })), loadProgress()]);
  if (!ctx.current()) return;
  for (const l of initial.logs) addLine(l);
  if (initial.logs.length === 0 && !ACTIVE.has(record.status)) logs.append(h("li", {}, "No log lines."));
}
