// Projects → environments → deployments: status, the actions the caller's role allows,
// a deployment's live step progress and logs, and the history with retry and rollback.
import { client, ok } from "./api.js";
import { badge, clear, fmt, h, onAction, onSubmit, table } from "./dom.js";
import { variablesSection } from "./variables.js";
import { domainsSection } from "./domains.js";
import { backupScheduleSection, lastBackupMark, lastBackupText } from "./backup-schedule.js";
import { secretBox } from "./settings.js";
import { backupsSection } from "./backups.js";
import { destroyButton, environmentSettingsForm, newEnvironmentForm, newProjectForm, projectSettingsForm } from "./project-forms.js";

const ACTIVE = new Set(["pending", "queued", "building", "deploying", "running"]);
const TERMINAL = new Set(["success", "failed", "cancelled", "destroyed", "rolled_back"]);

async function loadProjects(ctx) {
  return (await ok(client.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id: ctx.org.id } } }))).data;
}

function envActions(ctx, project, env, after) {
  const can = (code) => project.permissions.includes(code);
  const buttons = [];
  const label = (verb) => [verb, h("span", { class: "visually-hidden" }, ` ${project.name} ${env.name}`)];
  if (can("project.environments.deploy")) {
    const b = h("button", { type: "button", class: "deploy" }, label("Deploy"));
    b.addEventListener(
      "click",
      onAction(b, ctx.showError, async () => {
        const d = await ok(client.POST("/deployments", { body: { project_id: project.id, environment_id: env.id, git_branch: env.git_branch } }));
        ctx.navigate(`#/deployments/${d.id}`);
      }),
    );
    buttons.push(b);
  }
  if (can("project.environments.operate")) {
    const ops = env.status === "running" ? ["restart", "stop"] : env.status === "stopped" ? ["start"] : [];
    for (const op of ops) {
      const b = h("button", { type: "button", class: "secondary" }, label(op[0].toUpperCase() + op.slice(1)));
      b.addEventListener(
        "click",
        onAction(b, ctx.showError, async () => {
          const d = await ok(client.POST("/environments/{env_id}/actions/{action}", { params: { path: { env_id: env.id, action: op } }, body: {} }));
          ctx.announce(`${op} of ${env.name} queued.`);
          after?.(d);
        }),
      );
      buttons.push(b);
    }
  }
  return buttons;
}

const CERTIFICATE_LABEL = {
  none: "no certificate",
  valid: "certificate valid",
  pending: "certificate pending",
  not_requested: "certificate not requested",
  error: "certificate error",
};
const CERTIFICATE_BADGE = { none: "idle", valid: "success", pending: "pending", not_requested: "pending", error: "error" };

/** "Open" in a new tab when the environment has a URL, with the host it opens. */
function openLink(env) {
  if (!env.url) return h("span", { class: "muted" }, "no address");
  return h(
    "a",
    { href: env.url, target: "_blank", rel: "noopener noreferrer", class: "open-link" },
    "Open",
    h("span", { class: "visually-hidden" }, ` ${env.name} at`),
    " ",
    h("span", { class: "host" }, env.url.replace(/^https:\/\//, "")),
  );
}

/** The certificate in words (never by colour alone), with its expiry or the CA's error. */
function certificateBadge(env) {
  const c = env.certificate;
  const detail = c.status === "valid" && c.not_after ? ` until ${new Date(c.not_after).toLocaleDateString()}` : c.status === "error" && c.error ? `: ${c.error}` : "";
  return h("span", { class: "certificate", dataset: { certificate: c.status } }, badge(CERTIFICATE_BADGE[c.status] ?? "idle", CERTIFICATE_LABEL[c.status] ?? c.status), detail);
}

/** The buttons of a table row, or a word when the caller's role allows none. */
function actionsCell(buttons, none = "none for your role") {
  return buttons.length ? h("div", { class: "row-actions" }, buttons) : h("span", { class: "muted" }, none);
}

export async function projectsPage(main, ctx) {
  main.append(h("h1", {}, "Projects"));
  if (!ctx.org) {
    main.append(h("p", {}, "You are not a member of any organisation."));
    return;
  }
  const list = h("div", { class: "projects" });
  if (ctx.can("org.projects.manage")) {
    const slot = h("div", {});
    const place = () => slot.replaceChildren(newProjectForm(ctx, async () => {
      place();
      await reload();
    }));
    place();
    main.append(slot);
  }
  main.append(list);
  let projects = await loadProjects(ctx);
  if (!ctx.current()) return;

  // Live events re-render the list: a form keeps its element (what was typed, open or not)
  // across renders, and is made anew once it has done its work.
  const forms = new Map();
  function kept(key, make) {
    if (!forms.has(key)) {
      forms.set(
        key,
        make(async () => {
          forms.delete(key);
          await reload();
        }),
      );
    }
    return forms.get(key);
  }

  function render() {
    clear(list);
    if (projects.length === 0) list.append(h("p", {}, "No projects you can see in this organisation."));
    for (const p of projects) {
      const rows = p.environments.map((e) =>
        h(
          "tr",
          { dataset: { environmentId: e.id } },
          h("th", { scope: "row" }, h("a", { href: `#/environments/${e.id}` }, e.name)),
          h("td", {}, badge(e.status), e.last_backup && e.last_backup.status !== "completed" ? [" ", lastBackupMark(e)] : null),
          h("td", {}, e.git_branch),
          h("td", {}, e.server_name ?? "–"),
          h("td", {}, openLink(e), e.url ? [" ", certificateBadge(e)] : null),
          h("td", {}, e.last_deployment ? [h("a", { href: `#/deployments/${e.last_deployment.id}` }, `${e.last_deployment.kind} v${e.last_deployment.version}`), " ", badge(e.last_deployment.status)] : "none"),
          h("td", {}, actionsCell([...envActions(ctx, p, e, () => void reload()), ...(p.permissions.includes("project.environments.deploy") && e.status !== "pending" ? [destroyButton(ctx, p, e, () => reload())] : [])])),
        ),
      );
      list.append(
        h(
          "section",
          { class: "card project", "aria-labelledby": `p-${p.id}` },
          h("h2", { id: `p-${p.id}` }, p.name, " ", h("span", { class: "muted" }, `(${p.role.replace("_", " ")})`)),
          p.environments.length === 0
            ? h("p", {}, "No environments.")
            : table(`Environments of ${p.name}`, ["Environment", "Status", "Branch", "Server", "Address", "Last operation", "Actions"], rows),
          p.permissions.includes("project.environments.update") ? kept(`env:${p.id}`, (done) => newEnvironmentForm(ctx, p, done)) : null,
          ctx.can("org.projects.manage") ? kept(`settings:${p.id}`, (done) => projectSettingsForm(ctx, p, done)) : null,
        ),
      );
    }
  }

  let timer = 0;
  async function reload() {
    clearTimeout(timer);
    timer = 0;
    try {
      const fresh = await loadProjects(ctx);
      if (!ctx.current()) return;
      projects = fresh;
      const focused = document.activeElement?.closest?.("tr")?.dataset.environmentId;
      render();
      if (focused) list.querySelector(`tr[data-environment-id="${focused}"] a`)?.focus();
    } catch (err) {
      ctx.showError(err);
    }
  }
  const soon = () => {
    if (!timer) timer = setTimeout(() => void reload(), 300);
  };
  ctx.on("environment.status", soon);
  ctx.on("environment.routing", soon);
  ctx.on("deployment.status", soon);
  ctx.onCleanup(() => clearTimeout(timer));
  render();
}

function dnsText(dns) {
  if (dns.status === "ok") return `resolves to this server (${dns.resolved.join(", ")})`;
  if (dns.status === "mismatch") return `points to ${dns.resolved.join(", ")}, not to ${dns.expected.join(", ")}`;
  if (dns.status === "unresolved") return `does not resolve; point it to ${dns.expected.join(", ") || "the server"}`;
  return "not checked yet";
}

/**
 * The ERP's credentials, each generated by the first deploy and kept sealed: the master
 * password (admin_passwd) and the administrator's password (login admin). A rotation shows
 * the new one here once; the next deploy applies it.
 */
const CREDENTIALS = [
  {
    title: "ERP master password",
    hint: "The password of the ERP's database manager. Berth keeps it sealed and never shows it again after it is made; rotate it to get a new one.",
    button: "Rotate master password",
    path: "admin-password",
    rotate: (envId) => client.POST("/environments/{env_id}/admin-password/rotate", { params: { path: { env_id: envId } }, body: {} }),
    field: "admin_password",
    box: "New master password",
    after: "The ERP takes it at the environment's next deploy.",
  },
  {
    title: "ERP administrator password",
    hint: "The password of the ERP's administrator (login admin), set by the first deploy instead of admin/admin. Rotate it if it is lost; a password changed in the ERP itself is kept until you do.",
    button: "Rotate administrator password",
    path: "admin-login",
    rotate: (envId) => client.POST("/environments/{env_id}/admin-login/rotate", { params: { path: { env_id: envId } }, body: {} }),
    field: "admin_login_password",
    box: "New administrator password",
    after: "The environment's next deploy sets it in the ERP's database.",
  },
];

function credentialForm(ctx, env, c) {
  const submit = h("button", { type: "submit" }, c.button);
  const shown = h("div", {});
  const form = h("form", { class: `${c.path}-form` }, h("h2", {}, c.title), h("p", { class: "hint" }, c.hint), submit, shown);
  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const r = await ok(c.rotate(env.id));
      clear(shown).append(secretBox(`${c.box} for ${env.name}`, r[c.field], `Copy it now: this is the only time it is shown. ${c.after}`));
    }),
  );
  return form;
}

function adminPasswordSection(ctx, env) {
  return h("div", { class: "credentials" }, ...CREDENTIALS.map((c) => credentialForm(ctx, env, c)));
}

export async function environmentPage(main, ctx, envId) {
  const projects = ctx.org ? await loadProjects(ctx) : [];
  const project = projects.find((p) => p.environments.some((e) => e.id === envId));
  const env = project?.environments.find((e) => e.id === envId);
  if (!project || !env) {
    main.append(h("h1", {}, "Environment not found"), h("p", {}, h("a", { href: "#/projects" }, "Back to projects")));
    return;
  }
  const canDeploy = project.permissions.includes("project.environments.deploy");
  const statusEl = h("span", {}, badge(env.status));
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/projects" }, "Projects"), ` / ${project.name}`),
    h("h1", {}, `${project.name} / ${env.name}`),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Status"),
      h("dd", {}, statusEl),
      h("dt", {}, "Branch"),
      h("dd", {}, env.git_branch),
      h("dt", {}, "Deploy on push"),
      h("dd", {}, env.auto_deploy ? "yes" : "no"),
      h("dt", {}, "Server"),
      h("dd", {}, env.server_name ?? "–"),
      h("dt", {}, "Resources"),
      h("dd", {}, `${env.cpu_cores} cores · ${fmt.gbFromMb(env.ram_mb)} GB RAM · ${env.disk_gb} GB disk`),
      h("dt", {}, "Address"),
      h("dd", {}, openLink(env)),
      h("dt", {}, "Aliases"),
      h("dd", {}, env.aliases.length ? env.aliases.join(", ") : "none"),
      h("dt", {}, "Certificate"),
      h("dd", {}, certificateBadge(env)),
      h("dt", {}, "DNS"),
      h("dd", {}, dnsText(env.dns)),
      h("dt", {}, "Last backup"),
      h("dd", { id: "last-backup" }, lastBackupText(env)),
    ),
    h("div", { class: "actions" }, envActions(ctx, project, env, () => void loadHistory())),
    domainsSection(ctx, project, env),
    project.permissions.includes("project.environments.update") ? environmentSettingsForm(ctx, project, env, () => ctx.navigate(`#/environments/${env.id}`)) : null,
    project.permissions.includes("project.environments.update") ? variablesSection(ctx, project, env) : null,
    project.permissions.includes("project.backups.list") ? backupScheduleSection(ctx, env, project.permissions.includes("project.backups.create")) : null,
    h("h2", {}, "Deployment history"),
  );
  const history = h("div", {});
  main.append(history);
  const backups = project.permissions.includes("project.backups.list") ? backupsSection(ctx, project, env) : null;
  if (backups) main.append(backups.section);
  if (project.permissions.includes("project.environments.update")) main.append(adminPasswordSection(ctx, env));

  async function loadHistory() {
    const all = await ok(client.GET("/deployments", { params: { query: { project_id: project.id, limit: 100 } } }));
    if (!ctx.current()) return;
    const mine = all.filter((d) => d.environment_id === envId);
    clear(history);
    if (mine.length === 0) {
      history.append(h("p", {}, "No deployments yet."));
      return;
    }
    history.append(
      table(
        "Deployments, newest first",
        ["Version", "Kind", "Status", "Trigger", "Started", "Duration", "Actions"],
        mine.map((d) => {
          const actions = [];
          if (canDeploy && d.status === "failed") {
            const b = h("button", { type: "button", class: "secondary" }, "Retry", h("span", { class: "visually-hidden" }, ` version ${d.version}`));
            b.addEventListener("click", onAction(b, ctx.showError, async () => ctx.navigate(`#/deployments/${(await ok(client.POST("/deployments/{deployment_id}/retry", { params: { path: { deployment_id: d.id } }, body: {} }))).id}`)));
            actions.push(b);
          }
          if (canDeploy && d.status === "success" && ["deploy", "redeploy", "rollback"].includes(d.kind)) {
            const b = h("button", { type: "button", class: "secondary" }, "Roll back to this", h("span", { class: "visually-hidden" }, ` (version ${d.version})`));
            b.addEventListener("click", onAction(b, ctx.showError, async () => ctx.navigate(`#/deployments/${(await ok(client.POST("/deployments/{deployment_id}/rollback", { params: { path: { deployment_id: d.id } }, body: {} }))).id}`)));
            actions.push(b);
          }
          return h(
            "tr",
            {},
            h("th", { scope: "row" }, h("a", { href: `#/deployments/${d.id}` }, `v${d.version}`)),
            h("td", {}, d.kind),
            h("td", {}, badge(d.status)),
            h("td", {}, d.trigger),
            h("td", {}, fmt.time(d.started_at ?? d.created_at)),
            h("td", {}, d.duration_seconds === null ? "–" : `${Math.round(d.duration_seconds)} s`),
            h("td", {}, actionsCell(actions, "–")),
          );
        }),
      ),
    );
  }
  await loadHistory();
  await backups?.load();
  let timer = 0;
  ctx.on("deployment.status", (d) => {
    if (d.environment_id !== envId) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      void loadHistory().catch(ctx.showError);
      // A backup's record completes with its operation.
      void backups?.load().catch(ctx.showError);
    }, 300);
  });
  ctx.on("environment.status", (d) => {
    if (d.environment_id === envId) clear(statusEl).append(badge(d.status));
  });
  ctx.onCleanup(() => clearTimeout(timer));
}

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
    clearTimeout(timer);
    timer = setTimeout(() => void loadProgress().catch(ctx.showError), 150);
  });
  ctx.onCleanup(() => clearTimeout(timer));
  const [initial] = await Promise.all([ok(client.GET("/deployments/{deployment_id}/logs", { params: { path: { deployment_id: deploymentId }, query: { limit: 500 } } })), loadProgress()]);
  if (!ctx.current()) return;
  for (const l of initial.logs) addLine(l);
  if (initial.logs.length === 0 && !ACTIVE.has(record.status)) logs.append(h("li", {}, "No log lines."));
}
