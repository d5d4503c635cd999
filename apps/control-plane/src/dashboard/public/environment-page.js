// One environment's page: its facts, actions, domains, settings, promotion to production,
// variables, backup schedule, deployment history (with retry and rollback), backups and ERP
// credentials.
import { client, ok } from "./api.js";
import { badge, clear, fmt, h, onAction, table } from "./dom.js";
import { variablesSection } from "./variables.js";
import { mailsSection } from "./mails.js";
import { domainsSection } from "./domains.js";
import { backupScheduleSection, lastBackupText } from "./backup-schedule.js";
import { backupsSection } from "./backups.js";
import { environmentSettingsForm, promoteForm, stageBadge } from "./project-forms.js";
import { actionsCell, envActions } from "./environment-actions.js";
import { refreshFromProductionButton } from "./copy-from.js";
import { certificateBadge, dnsText, openLink } from "./environment-address.js";
import { adminPasswordSection } from "./erp-credentials.js";
import { loadProjects } from "./projects.js";

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
      h("dt", {}, "Stage"),
      h("dd", { id: "stage" }, stageBadge(env)),
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
    h("div", { class: "actions" }, envActions(ctx, project, env, () => void loadHistory()), refreshFromProductionButton(ctx, project, env)),
    domainsSection(ctx, project, env),
    project.permissions.includes("project.environments.update") ? environmentSettingsForm(ctx, project, env, () => ctx.navigate(`#/environments/${env.id}`)) : null,
    project.permissions.includes("project.environments.update") && env.stage !== "production" ? promoteForm(ctx, project, env, () => ctx.navigate(`#/environments/${env.id}`)) : null,
    project.permissions.includes("project.environments.update") ? variablesSection(ctx, project, env) : null,
    env.stage !== "production" && project.permissions.includes("project.deployments.view") ? mailsSection(ctx, env) : null,
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
