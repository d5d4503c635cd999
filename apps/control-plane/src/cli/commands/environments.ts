// `berth environments list|show|create|update|set-stage|promote|copy-from|delete`. With an API key over
// the public API (/environments, /projects/{id}/environments); with a session over the
// platform API, whose project lists hold the environments (no read-one endpoint: `show` finds
// it there) and whose changes go through /projects/{project_id}/environments/{env_id}. A new
// size applies from the environment's next deploy; the API holds the stage rules (one
// production per project, reached only by a promotion).
import { Argument, Option, type Command } from "commander";
import { ok, type PublicComponents } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { wholeNumber, repeated } from "../option-values.ts";
import { ORG_OPTION, organizationId, organizationIds } from "../organizations.ts";
import type { Column } from "../output.ts";
import { allPages } from "../pages.ts";
import { confirm } from "../prompt.ts";
import { registerCopyFrom } from "./environments-copy-from.ts";

/** The stages, as the API's schema names them (a stage the API adds fails to compile here until listed). */
type Stage = PublicComponents["schemas"]["Environment"]["stage"];
type OtherStage = Exclude<Stage, "production">;
const OTHER_STAGES = Object.keys({ staging: true, development: true } satisfies Record<OtherStage, true>) as OtherStage[];
const STAGES: Stage[] = ["production", ...OTHER_STAGES];

interface EnvironmentView {
  id: string;
  name: string;
  project_id: string;
  status: string;
  stage: Stage;
  git_branch: string;
  domain: string | null;
  aliases: string[];
  auto_deploy: boolean;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  url: string | null;
  server_id: string | null;
  refresh_on_push: boolean;
  require_passing_tests: boolean;
}

const columns: Column<EnvironmentView>[] = [
  { header: "id", get: (e) => e.id },
  { header: "name", get: (e) => e.name },
  { header: "project", get: (e) => e.project_id },
  { header: "status", get: (e) => e.status },
  { header: "stage", get: (e) => e.stage },
  { header: "branch", get: (e) => e.git_branch },
  { header: "url", get: (e) => e.url },
];

function showEnvironment(ctx: Context, e: EnvironmentView): void {
  ctx.out.result(e, () =>
    ctx.out.record([
      ["ID", e.id],
      ["Name", e.name],
      ["Project", e.project_id],
      ["Status", e.status],
      ["Stage", e.stage],
      ...(e.stage === "staging"
        ? ([
            ["Refresh on push", e.refresh_on_push ? "on (production's data before each pushed commit)" : "off"],
            ["Require passing tests", e.require_passing_tests ? "on" : "off"],
          ] as [string, string][])
        : []),
      ["Branch", e.git_branch],
      ["Auto-deploy", e.auto_deploy ? "on" : "off"],
      ["Domain", e.domain],
      ["Aliases", e.aliases],
      ["URL", e.url],
      ["Size", `${e.cpu_cores} cores, ${e.ram_mb} MB RAM, ${e.disk_gb} GB disk`],
      ["Server", e.server_id],
    ]),
  );
}

/** With a session: every environment of the projects the person sees, each with its project's id. */
async function platformEnvironments(ctx: Context, orgs: string[]): Promise<EnvironmentView[]> {
  const api = ctx.platform();
  const all: EnvironmentView[] = [];
  for (const organization_id of orgs) {
    const projects = (await ok(api.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id } } }))).data;
    for (const p of projects) all.push(...p.environments.map((e) => ({ ...e, project_id: p.id })));
  }
  return all;
}

export async function findEnvironment(ctx: Context, id: string, org?: string): Promise<EnvironmentView> {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().GET("/environments/{id}", { params: { path: { id } } }));
  const found = (await platformEnvironments(ctx, await organizationIds(ctx.platform(), org))).find((e) => e.id === id);
  if (!found) throw new CliError(`No environment ${id} that you can see.`, EXIT.failed, "environment_not_found");
  return found;
}

interface CreateOptions {
  project: string;
  name: string;
  stage?: Stage;
  branch?: string;
  cpu?: number;
  ram?: number;
  disk?: number;
  workers?: number;
  domain?: string;
  alias?: string[];
  autoDeploy?: boolean;
  server?: string;
}

interface Size {
  cpu?: number;
  ram?: number;
  disk?: number;
  workers?: number;
}

/** --cpu, --ram, --disk and --workers (create and update take the same), `when` closing each description. */
const withSizeOptions = (command: Command, when = "") =>
  command
    .option("--cpu <cores>", `CPU cores${when}`, wholeNumber)
    .option("--ram <mb>", `memory in MB${when}`, wholeNumber)
    .option("--disk <gb>", `disk in GB${when}`, wholeNumber)
    .option("--workers <n>", `ERP worker processes${when}`, wholeNumber);

/** The size options as the APIs name them. */
const sizeBody = (opts: Size) => ({
  ...(opts.cpu !== undefined ? { cpu_cores: opts.cpu } : {}),
  ...(opts.ram !== undefined ? { ram_mb: opts.ram } : {}),
  ...(opts.disk !== undefined ? { disk_gb: opts.disk } : {}),
  ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
});

interface UpdateOptions extends Size {
  branch?: string;
  domain?: string | false;
  alias?: string[];
  noAliases?: boolean;
  autoDeploy?: boolean;
  requirePassingTests?: boolean;
  refreshOnPush?: boolean;
  org?: string;
}

export function registerEnvironments(program: Command, context: () => Context): void {
  const environments = program
    .command("environments")
    .alias("envs")
    .description("Environments: one running copy of a project (production, staging, …) with its branch, size and domain")
    .addHelpText("after", "\nExamples:\n  $ berth environments list --project <project-id>\n  $ berth environments create --project <project-id> --name staging --branch staging --cpu 2 --ram 4096");

  environments
    .command("list")
    .description("List environments, of one project or of all you can see")
    .option("--project <project-id>", "only this project's")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExamples:\n  $ berth environments list\n  $ berth environments list --project <project-id> --json")
    .action(async (opts: { project?: string; org?: string }) => {
      const ctx = context();
      let rows: EnvironmentView[];
      if (ctx.credentials().kind === "api_key") {
        const api = ctx.public();
        const projectIds = opts.project ? [opts.project] : (await allPages((query) => ok(api.GET("/projects", { params: { query } })))).map((p) => p.id);
        rows = [];
        for (const id of projectIds) rows.push(...(await allPages((query) => ok(api.GET("/projects/{id}/environments", { params: { path: { id }, query } })))));
      } else {
        const api = ctx.platform();
        const orgs = opts.project ? await organizationIds(api, opts.org) : [await organizationId(api, opts.org)];
        rows = (await platformEnvironments(ctx, orgs)).filter((e) => !opts.project || e.project_id === opts.project);
      }
      ctx.out.result(rows, () => ctx.out.table(rows, columns, "No environments: create one with `berth environments create`."));
    });

  environments
    .command("show <environment>")
    .description("Show one environment")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth environments show <environment-id>")
    .action(async (id: string, opts: { org?: string }) => {
      const ctx = context();
      showEnvironment(ctx, await findEnvironment(ctx, id, opts.org));
    });

  withSizeOptions(
    environments
      .command("create")
      .description("Create an environment of a project (pending until its first deploy)")
      .requiredOption("--project <project-id>", "the project")
      .requiredOption("--name <name>", "its name, e.g. staging")
      .option("--branch <branch>", "the Git branch it runs (default: the project's)"),
  )
    .option("--domain <name>", "the domain it is served at")
    .option("--alias <name>", "another host name served like the domain (repeatable)", repeated)
    .option("--auto-deploy", "deploy on every push to its branch")
    .option("--server <server-id>", "another server of the organisation than the project's (staging apart from production, say)")
    .addOption(new Option("--stage <stage>", "production, staging or development (default: production when the project has none, else development)").choices(STAGES))
    .addHelpText(
      "after",
      `
The sizes, the ERP version (the project's) and the server (the project's unless --server) are fixed at creation.

Examples:
  $ berth environments create --project <project-id> --name staging --branch staging --stage staging
  $ berth environments create --project <project-id> --name production --cpu 4 --ram 8192 --disk 80 --domain erp.example.com`,
    )
    .action(async (opts: CreateOptions) => {
      const ctx = context();
      const body = {
        name: opts.name,
        ...(opts.stage !== undefined ? { stage: opts.stage } : {}),
        ...(opts.branch !== undefined ? { git_branch: opts.branch } : {}),
        ...sizeBody(opts),
        ...(opts.domain !== undefined ? { domain: opts.domain } : {}),
        ...(opts.alias ? { aliases: opts.alias } : {}),
        ...(opts.autoDeploy ? { auto_deploy: true } : {}),
        ...(opts.server !== undefined ? { server_id: opts.server } : {}),
      };
      const env =
        ctx.credentials().kind === "api_key"
          ? await ok(ctx.public().POST("/environments", { body: { ...body, project_id: opts.project } }))
          : await ok(ctx.platform().POST("/projects/{project_id}/environments", { params: { path: { project_id: opts.project } }, body }));
      showEnvironment(ctx, env);
    });

  withSizeOptions(
    environments
      .command("update <environment>")
      .description("Change an environment's domain, aliases and size (from its next deploy on); with a session also its branch and auto-deploy")
      .option("--domain <name>", "a new domain")
      .option("--no-domain", "remove the domain (the generated name stays)")
      .option("--alias <name>", "the host names served like the domain, replacing the current ones (repeatable)", repeated)
      .option("--no-aliases", "remove every alias")
      .option("--branch <branch>", "a new Git branch (signed in by e-mail only)")
      .option("--auto-deploy", "deploy on every push (signed in by e-mail only)")
      .option("--no-auto-deploy", "stop deploying on push (signed in by e-mail only)")
      .option("--require-passing-tests", "a staging environment refuses a commit whose module tests fail")
      .option("--no-require-passing-tests", "a staging environment deploys whatever its tests say")
      .option("--refresh-on-push", "a staging environment gets production's data (neutralised) before each pushed commit is deployed")
      .option("--no-refresh-on-push", "a push just deploys the staging environment"),
    ", from the next deploy on",
  )
    .option(...ORG_OPTION)
    .addHelpText(
      "after",
      "\nExamples:\n  $ berth environments update <environment-id> --domain erp.example.com --alias www.erp.example.com\n  $ berth environments update <staging-id> --refresh-on-push --require-passing-tests\n  $ berth environments update <environment-id> --branch release --no-auto-deploy\n  $ berth environments update <environment-id> --cpu 4 --ram 8192 && berth deploy <environment-id> --follow",
    )
    .action(async (id: string, opts: UpdateOptions & { aliases?: boolean }) => {
      const ctx = context();
      const body = {
        ...(opts.domain !== undefined ? { domain: opts.domain === false ? null : opts.domain } : {}),
        ...(opts.alias ? { aliases: opts.alias } : opts.aliases === false ? { aliases: [] } : {}),
        ...sizeBody(opts),
        ...(opts.requirePassingTests !== undefined ? { require_passing_tests: opts.requirePassingTests } : {}),
        ...(opts.refreshOnPush !== undefined ? { refresh_on_push: opts.refreshOnPush } : {}),
      };
      const sessionOnly = {
        ...(opts.branch !== undefined ? { git_branch: opts.branch } : {}),
        ...(opts.autoDeploy !== undefined ? { auto_deploy: opts.autoDeploy } : {}),
      };
      if (Object.keys(body).length + Object.keys(sessionOnly).length === 0) {
        throw new CliError("Nothing to change: pass --domain, --no-domain, --alias, --no-aliases, --cpu, --ram, --disk, --workers, --(no-)require-passing-tests, --(no-)refresh-on-push, --branch or --(no-)auto-deploy.", EXIT.usage, "nothing_to_change");
      }
      let env: EnvironmentView;
      if (ctx.credentials().kind === "api_key") {
        if (Object.keys(sessionOnly).length > 0) throw new CliError("With an API key the branch and auto-deploy cannot be changed (the public API takes the domain, aliases and size).", EXIT.usage, "option_not_supported");
        env = await ok(ctx.public().PATCH("/environments/{id}", { params: { path: { id } }, body }));
      } else {
        const { project_id } = await findEnvironment(ctx, id, opts.org);
        env = await ok(ctx.platform().PATCH("/projects/{project_id}/environments/{env_id}", { params: { path: { project_id, env_id: id } }, body: { ...body, ...sessionOnly } }));
      }
      showEnvironment(ctx, env);
    });

  environments
    .command("set-stage")
    .description("Move an environment between staging and development (production changes only by `berth environments promote`)")
    .addArgument(new Argument("<environment>", "the environment's id"))
    .addArgument(new Argument("<stage>", "staging or development").choices(OTHER_STAGES))
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth environments set-stage <environment-id> staging")
    .action(async (id: string, stage: OtherStage, opts: { org?: string }) => {
      const ctx = context();
      let env: EnvironmentView;
      if (ctx.credentials().kind === "api_key") {
        env = await ok(ctx.public().PATCH("/environments/{id}", { params: { path: { id } }, body: { stage } }));
      } else {
        const { project_id } = await findEnvironment(ctx, id, opts.org);
        env = await ok(ctx.platform().PATCH("/projects/{project_id}/environments/{env_id}", { params: { path: { project_id, env_id: id } }, body: { stage } }));
      }
      showEnvironment(ctx, env);
    });

  environments
    .command("promote <environment>")
    .description("Make an environment its project's production; the current production becomes --previous-stage")
    .addOption(new Option("--previous-stage <stage>", "what the current production becomes (needed while the project has one)").choices(OTHER_STAGES))
    .addHelpText("after", "\nExample:\n  $ berth environments promote <environment-id> --previous-stage staging")
    .action(async (id: string, opts: { previousStage?: OtherStage }) => {
      const ctx = context();
      const body = opts.previousStage ? { previous_stage: opts.previousStage } : {};
      const out =
        ctx.credentials().kind === "api_key"
          ? await ok(ctx.public().POST("/environments/{id}/promote", { params: { path: { id } }, body }))
          : await ok(ctx.platform().POST("/environments/{env_id}/promote", { params: { path: { env_id: id } }, body }));
      ctx.out.result(out, () =>
        ctx.out.line(
          `${out.environment.name} is the production environment of its project${out.previous ? `; ${out.previous.name} became ${out.previous.stage}` : ""}.`,
        ),
      );
    });

  registerCopyFrom(environments, context);

  environments
    .command("delete <environment>")
    .description("Destroy an environment: its containers and database (with --delete-data also its files)")
    .option("--delete-data", "also delete its data directory (addons, file store, logs)")
    .option("-y, --yes", "do not ask for confirmation (needed without a terminal)")
    .addHelpText("after", "\nExample:\n  $ berth environments delete <environment-id> --yes")
    .action(async (id: string, opts: { deleteData?: boolean; yes?: boolean }) => {
      const ctx = context();
      await confirm(`Destroy environment ${id}${opts.deleteData ? " and delete its data" : ""}?`, opts.yes);
      const query = { delete_data: Boolean(opts.deleteData) };
      const answer =
        ctx.credentials().kind === "api_key"
          ? await ok(ctx.public().DELETE("/environments/{id}", { params: { path: { id }, query, header: { "x-confirm-delete": "true" } } }))
          : await ok(ctx.platform().DELETE("/deployments/environment/{environment_id}/destroy", { params: { path: { environment_id: id }, query } }));
      ctx.out.result(answer, () => ctx.out.line(`Destroying environment ${id}.`));
    });
}
