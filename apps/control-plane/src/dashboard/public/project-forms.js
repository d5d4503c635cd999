// Making and changing projects and environments: a new project on one of the organisation's
// servers, a project's name, branch, repository and development settings (the server a push
// to a new branch makes a development environment on, and how many run), a new environment with everything the API
// takes (stage, branch, domain and aliases, deploy on push, size), an environment's settings
// (what its PATCH takes, the stage between staging and development among them), its promotion
// to production, and deleting or destroying them. The API checks every value (the forms
// do not: `novalidate`), so the page shows its messages, each field's next to the field.
import { client, ok } from "./api.js";
import { badge, checkField, field, h, onAction, onSubmit } from "./dom.js";
import { listServers } from "./servers.js";

/** ERP versions offered as suggestions; the API says which it accepts. */
const ERP_VERSIONS = ["18.0", "17.0", "16.0", "19.0"];

const text = (name, attrs = {}) => h("input", { type: "text", name, autocomplete: "off", ...attrs });
const number = (name, value) => h("input", { type: "number", name, value: String(value), inputmode: "numeric" });
const checkbox = (name, checked) => h("input", { type: "checkbox", name, checked });
/** A form's values, without the fields left empty. */
const filled = (obj) => Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== "" && v !== undefined));
/** A number field's value as typed (the API says what it accepts), undefined when empty. */
const int = (input) => (input.value.trim() === "" ? undefined : Number(input.value));
/** "a.example.com, b.example.com" as a list. */
const names = (input) =>
  input.value
    .split(",")
    .map((a) => a.trim())
    .filter((a) => a !== "");
const ALIASES_HINT = "More names, separated by commas";

/** A select of stages, `current` chosen; `none` adds a first, empty choice with that label. */
function stageSelect(name, stages, current, none) {
  return h(
    "select",
    { name },
    none ? h("option", { value: "" }, none) : null,
    stages.map((s) => h("option", { value: s, selected: s === current }, s)),
  );
}

/** An environment's stage as a badge (production, staging, development). */
export function stageBadge(env) {
  return badge(`stage_${env.stage}`, env.stage);
}

/** A disclosure holding a form, closed until asked for, so the page stays a list. */
function disclosure(label, form, className) {
  return h("details", { class: `form-disclosure ${className}` }, h("summary", {}, label), form);
}

/** "New project": name, server, ERP version, repository and branch. */
export function newProjectForm(ctx, done) {
  const name = text("name", { required: true });
  const server = h("select", { name: "server_id" }, h("option", { value: "" }, "Loading servers…"));
  const version = text("erp_version", { list: "erp-versions", value: "17.0" });
  const repo = text("git_repo_url", { type: "url", placeholder: "https://github.com/acme/erp-addons.git" });
  const branch = text("default_branch", { value: "main" });
  const submit = h("button", { type: "submit" }, "Create project");
  void listServers(ctx.org.id).then(
    (res) => {
      server.replaceChildren(...(res.data.length ? res.data.map((s) => h("option", { value: s.id }, s.name)) : [h("option", { value: "" }, "No servers yet: add one first")]));
    },
    (err) => ctx.showError(err),
  );
  const form = h(
    "form",
    {
      class: "card inline-form",
      novalidate: true,
      "aria-label": "New project",
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const body = filled({ name: name.value.trim(), server_id: server.value, erp_version: version.value.trim(), git_repo_url: repo.value.trim(), default_branch: branch.value.trim() });
        const created = await ok(client.POST("/organizations/{organization_id}/projects", { params: { path: { organization_id: ctx.org.id } }, body }));
        ctx.clearError();
        ctx.announce(`Project ${created.name} created.`);
        await done(created);
      }),
    },
    field("Project name", name),
    field("Server", server),
    field("ERP version", version),
    h("datalist", { id: "erp-versions" }, ERP_VERSIONS.map((v) => h("option", { value: v }))),
    field("Repository URL (optional)", repo),
    field("Default branch", branch),
    h("div", { class: "actions" }, submit),
  );
  return disclosure("New project", form, "new-project");
}

/**
 * A select of the organisation's servers after a first option `none` (value ""), `current`
 * chosen (kept chosen while the list loads, so a save before it arrives changes nothing).
 */
function serverSelect(ctx, name, none, current) {
  const first = () => h("option", { value: "" }, none);
  const select = h("select", { name }, first(), current ? h("option", { value: current, selected: true }, "Loading servers…") : null);
  void listServers(ctx.org.id).then(
    (res) => select.replaceChildren(first(), ...res.data.map((s) => h("option", { value: s.id, selected: s.id === current }, s.name))),
    (err) => ctx.showError(err),
  );
  return select;
}

/** A project's settings (name, default branch, repository, development settings: what its PATCH takes) and deleting it. */
export function projectSettingsForm(ctx, project, done) {
  const name = text("name", { value: project.name });
  const branch = text("default_branch", { value: project.default_branch ?? "" });
  const repo = text("git_repo_url", { type: "url", value: project.git_repo_url ?? "", placeholder: "none" });
  const devServer = serverSelect(ctx, "development_server_id", "Off: pushes create no environment", project.development_server_id ?? null);
  const devLimit = number("development_limit", project.development_limit ?? 3);
  const save = h("button", { type: "submit" }, "Save project");
  const remove = h("button", { type: "button", class: "secondary danger" }, "Delete project");
  const params = { path: { project_id: project.id } };
  remove.addEventListener(
    "click",
    onAction(remove, ctx.showError, async () => {
      if (!confirm(`Delete the project ${project.name}? Its environments must be stopped or destroyed first.`)) return;
      await ok(client.DELETE("/projects/{project_id}", { params }));
      ctx.announce(`Project ${project.name} deleted.`);
      await done();
    }),
  );
  const form = h(
    "form",
    {
      class: "inline-form",
      novalidate: true,
      "aria-label": `Settings of ${project.name}`,
      onsubmit: onSubmit(save, ctx.showError, async () => {
        const url = repo.value.trim();
        const body = {
          name: name.value.trim(),
          default_branch: branch.value.trim(),
          git_repo_url: url === "" ? null : url,
          development_server_id: devServer.value === "" ? null : devServer.value,
          ...filled({ development_limit: int(devLimit) }),
        };
        await ok(client.PATCH("/projects/{project_id}", { params, body }));
        ctx.clearError();
        ctx.announce(`Project ${name.value.trim()} saved.`);
        await done();
      }),
    },
    field("Project name", name),
    field("Default branch", branch),
    field("Repository URL", repo, "Empty: no repository"),
    field("Development environments on push", devServer, "A push to a branch without an environment makes a development environment on this server"),
    field("Development limit", devLimit, "At most this many run at once; the least recently deployed idle one is stopped for a new one, never destroyed"),
    h("div", { class: "actions" }, save, remove),
  );
  return disclosure("Project settings", form, "project-settings");
}

/** "New environment" of a project: name, branch, domain and aliases, deploy on push, size and workers. */
export function newEnvironmentForm(ctx, project, done) {
  const name = text("name", { placeholder: "staging" });
  const stage = stageSelect("stage", ["production", "staging", "development"], "", "Automatic");
  const branch = text("git_branch", { placeholder: project.default_branch ?? "main" });
  const domain = text("domain", { placeholder: "erp.example.com (optional)" });
  const aliases = text("aliases", { placeholder: "www.example.com (optional)" });
  const autoDeploy = checkbox("auto_deploy", false);
  const server = serverSelect(ctx, "server_id", "The project's server", null);
  const cpu = number("cpu_cores", 1);
  const ram = number("ram_mb", 2048);
  const disk = number("disk_gb", 20);
  const workers = number("workers", 2);
  const submit = h("button", { type: "submit" }, "Create environment");
  const form = h(
    "form",
    {
      class: "inline-form",
      novalidate: true,
      "aria-label": `New environment of ${project.name}`,
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const body = filled({
          name: name.value.trim(),
          stage: stage.value,
          git_branch: branch.value.trim(),
          domain: domain.value.trim(),
          aliases: names(aliases).length ? names(aliases) : undefined,
          auto_deploy: autoDeploy.checked,
          server_id: server.value || undefined,
          cpu_cores: int(cpu),
          ram_mb: int(ram),
          disk_gb: int(disk),
          workers: int(workers),
        });
        const env = await ok(client.POST("/projects/{project_id}/environments", { params: { path: { project_id: project.id } }, body }));
        ctx.clearError();
        ctx.announce(`Environment ${env.name} created; deploy it to start it.`);
        await done(env);
      }),
    },
    field("Environment name", name),
    field("Stage", stage, "Automatic: production if the project has none, else development"),
    field("Branch", branch, `Empty: ${project.default_branch ?? "the project's default branch"}`),
    field("Domain", domain),
    field("Aliases", aliases, ALIASES_HINT),
    field("Server", server, "Another server of the organisation, e.g. staging apart from production"),
    field("CPU cores", cpu),
    field("Memory (MB)", ram),
    field("Disk (GB)", disk),
    field("ERP workers", workers),
    checkField("Deploy on push", autoDeploy),
    h("div", { class: "actions" }, submit),
  );
  return disclosure("New environment", form, "new-environment");
}

/**
 * An environment's settings, what its PATCH takes: branch, deploy on push, domain and
 * aliases (a deployed environment's proxy serves new names at once), and its size (from
 * its next deploy on).
 */
export function environmentSettingsForm(ctx, project, env, done) {
  const branch = text("git_branch", { value: env.git_branch });
  // Production changes stage only by a promotion (of another environment).
  const stage = env.stage === "production" ? null : stageSelect("stage", ["staging", "development"], env.stage);
  const autoDeploy = checkbox("auto_deploy", env.auto_deploy);
  // Only a staging environment's deploy can be refused for its tests (development ones serve anyway).
  const requireTests = env.stage === "staging" ? checkbox("require_passing_tests", env.require_passing_tests === true) : null;
  const refresh = env.stage === "staging" ? checkbox("refresh_on_push", env.refresh_on_push === true) : null;
  const domain = text("domain", { value: env.domain ?? "", placeholder: "erp.example.com" });
  const aliases = text("aliases", { value: env.aliases.join(", "), placeholder: "www.example.com" });
  const cpu = number("cpu_cores", env.cpu_cores);
  const ram = number("ram_mb", env.ram_mb);
  const disk = number("disk_gb", env.disk_gb);
  const workers = number("workers", env.workers);
  const submit = h("button", { type: "submit" }, "Save settings");
  const form = h(
    "form",
    {
      class: "environment-settings",
      novalidate: true,
      "aria-label": `Settings of ${env.name}`,
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const size = filled({ cpu_cores: int(cpu), ram_mb: int(ram), disk_gb: int(disk), workers: int(workers) });
        const body = { git_branch: branch.value.trim(), auto_deploy: autoDeploy.checked, domain: domain.value.trim() || null, aliases: names(aliases), ...size, ...(stage ? { stage: stage.value } : {}), ...(requireTests ? { require_passing_tests: requireTests.checked } : {}), ...(refresh ? { refresh_on_push: refresh.checked } : {}) };
        const updated = await ok(client.PATCH("/projects/{project_id}/environments/{env_id}", { params: { path: { project_id: project.id, env_id: env.id } }, body }));
        ctx.clearError();
        ctx.announce(`Saved. ${updated.url ? `${env.name} is served at ${updated.url}.` : ""}`);
        await done(updated);
      }),
    },
    h("h2", {}, "Settings"),
    stage ? field("Stage", stage, "Production is reached by promoting an environment") : null,
    field("Branch", branch, "Deployed from the next deploy on"),
    checkField("Deploy on push", autoDeploy),
    requireTests ? checkField("Refuse a commit whose module tests fail", requireTests) : null,
    refresh ? checkField("Refresh from production on every push", refresh) : null,
    field("Domain", domain, "Empty: the name Berth generates, if the installation has a base domain"),
    field("Aliases", aliases, ALIASES_HINT),
    field("CPU cores", cpu, "The size applies from the next deploy"),
    field("Memory (MB)", ram),
    field("Disk (GB)", disk),
    field("ERP workers", workers),
    submit,
  );
  return form;
}

/**
 * "Promote to production": the environment becomes its project's production, and the current
 * production (named when the project's list shows it) the stage chosen here.
 */
export function promoteForm(ctx, project, env, done) {
  const current = project.environments.find((e) => e.stage === "production");
  const previous = stageSelect("previous_stage", ["staging", "development"], "staging");
  const submit = h("button", { type: "submit" }, `Promote ${env.name} to production`);
  const form = h(
    "form",
    {
      class: "inline-form",
      novalidate: true,
      "aria-label": `Promote ${env.name} to production`,
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const out = await ok(client.POST("/environments/{env_id}/promote", { params: { path: { env_id: env.id } }, body: { previous_stage: previous.value } }));
        ctx.clearError();
        ctx.announce(`${out.environment.name} is now production${out.previous ? `; ${out.previous.name} became ${out.previous.stage}` : ""}.`);
        await done(out);
      }),
    },
    h("p", {}, "Nothing is deployed or copied: only the stages change."),
    field(current ? `${current.name} (the current production) becomes` : "The current production, if any, becomes", previous),
    h("div", { class: "actions" }, submit),
  );
  return disclosure("Promote to production", form, "promote");
}

/** Destroys an environment after a confirmation: containers, database and configuration go. */
export function destroyButton(ctx, project, env, done) {
  const b = h("button", { type: "button", class: "secondary danger" }, "Destroy", h("span", { class: "visually-hidden" }, ` ${project.name} ${env.name}`));
  b.addEventListener(
    "click",
    onAction(b, ctx.showError, async () => {
      if (!confirm(`Destroy ${project.name}/${env.name}? Its containers and database are removed; this cannot be undone.`)) return;
      await ok(client.DELETE("/deployments/environment/{environment_id}/destroy", { params: { path: { environment_id: env.id } } }));
      ctx.announce(`Destroying ${env.name}.`);
      await done();
    }),
  );
  return b;
}
