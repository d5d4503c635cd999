// Projects → environments → deployments: the projects list with each project's environments,
// their status and the actions the caller's role allows. An environment's page is
// environment-page.js, a deployment's (live step progress and logs) deployment-page.js.
import { client, ok } from "./api.js";
import { badge, clear, h, table } from "./dom.js";
import { lastBackupMark } from "./backup-schedule.js";
import { destroyButton, newEnvironmentForm, newProjectForm, projectSettingsForm, stageBadge } from "./project-forms.js";
import { actionsCell, envActions } from "./environment-actions.js";
import { certificateBadge, openLink } from "./environment-address.js";

/** The organisation's projects the caller can see, each with its environments and the caller's permissions. */
export async function loadProjects(ctx) {
  return (await ok(client.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id: ctx.org.id } } }))).data;
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
          h("td", { class: "stage" }, stageBadge(e)),
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
            : table(`Environments of ${p.name}`, ["Environment", "Status", "Stage", "Branch", "Server", "Address", "Last operation", "Actions"], rows),
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
