// `berth projects list|show|create|update|delete`. With an API key over the public API
// (/projects), with a session over the platform API (/organizations/{id}/projects, which has no
// read-one endpoint: `show` finds the project in the lists).
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { ORG_OPTION, organizationId, organizationIds } from "../organizations.ts";
import type { Column } from "../output.ts";
import { allPages } from "../pages.ts";
import { confirm } from "../prompt.ts";
import { wholeNumber } from "../option-values.ts";

/** What both APIs give of a project (the platform's list adds its environments). */
interface ProjectView {
  id: string;
  name: string;
  erp_version: string | null;
  default_branch: string | null;
  git_repo_url: string | null;
  server_id?: string | null;
  development_server_id?: string | null;
  development_limit?: number;
  environment_count?: number;
  environments?: unknown[];
}

const columns: Column<ProjectView>[] = [
  { header: "id", get: (p) => p.id },
  { header: "name", get: (p) => p.name },
  { header: "erp", get: (p) => p.erp_version },
  { header: "branch", get: (p) => p.default_branch },
  { header: "environments", get: (p) => p.environment_count ?? p.environments?.length },
];

function showProject(ctx: Context, p: ProjectView): void {
  ctx.out.result(p, () =>
    ctx.out.record([
      ["ID", p.id],
      ["Name", p.name],
      ["ERP version", p.erp_version],
      ["Default branch", p.default_branch],
      ["Repository", p.git_repo_url],
      ...(p.server_id !== undefined ? [["Server", p.server_id] as [string, unknown]] : []),
      ["Development server", p.development_server_id ?? "none (pushes create no development environment)"],
      ["Development limit", p.development_limit],
      ["Environments", p.environment_count ?? p.environments?.length],
    ]),
  );
}

/** A project by id: GET /projects/{id} with a key; with a session, from the organisations' lists. */
export async function findProject(ctx: Context, id: string, org?: string): Promise<ProjectView & { organization_id?: string }> {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().GET("/projects/{id}", { params: { path: { id } } }));
  const api = ctx.platform();
  for (const orgId of await organizationIds(api, org)) {
    const found = (await ok(api.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id: orgId } } }))).data.find((p) => p.id === id);
    if (found) return { ...found, organization_id: orgId };
  }
  throw new CliError(`No project ${id} that you can see.`, EXIT.failed, "project_not_found");
}

interface CreateOptions {
  name: string;
  server: string;
  repo?: string;
  branch?: string;
  erpVersion?: string;
  org?: string;
}

interface UpdateOptions {
  name?: string;
  branch?: string;
  repo?: string | false;
  developmentServer?: string;
  developmentLimit?: number;
}

/** The development settings as the API takes them: "none" turns them off; the API checks the server and the limit's range. */
function developmentBody(opts: UpdateOptions): { development_server_id?: string | null; development_limit?: number } {
  return {
    ...(opts.developmentServer !== undefined ? { development_server_id: opts.developmentServer === "none" ? null : opts.developmentServer } : {}),
    ...(opts.developmentLimit !== undefined ? { development_limit: opts.developmentLimit } : {}),
  };
}

export function registerProjects(program: Command, context: () => Context): void {
  const projects = program
    .command("projects")
    .description("Projects: an ERP code base on one of your servers, with its environments")
    .addHelpText("after", "\nExamples:\n  $ berth projects list\n  $ berth projects create --name 'Acme ERP' --server <server-id> --erp-version 17.0");

  projects
    .command("list")
    .description("List the projects you can see")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExamples:\n  $ berth projects list\n  $ berth projects list --json | jq -r '.[].id'")
    .action(async (opts: { org?: string }) => {
      const ctx = context();
      const rows: ProjectView[] =
        ctx.credentials().kind === "api_key"
          ? await allPages((query) => ok(ctx.public().GET("/projects", { params: { query } })))
          : await (async () => {
              const api = ctx.platform();
              const organization_id = await organizationId(api, opts.org);
              return (await ok(api.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id } } }))).data;
            })();
      ctx.out.result(rows, () => ctx.out.table(rows, columns, "No projects yet: create one with `berth projects create`."));
    });

  projects
    .command("show <project>")
    .description("Show one project")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth projects show 3f0c…")
    .action(async (id: string, opts: { org?: string }) => {
      const ctx = context();
      showProject(ctx, await findProject(ctx, id, opts.org));
    });

  projects
    .command("create")
    .description("Create a project on one of your servers")
    .requiredOption("--name <name>", "the project's name")
    .requiredOption("--server <server-id>", "the server its environments run on (`berth servers list`)")
    .option("--repo <url>", "the HTTPS URL of its Git repository (addons)")
    .option("--branch <branch>", "the default branch (the API's default: main)")
    .option("--erp-version <version>", "the ERP version, e.g. 17.0")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth projects create --name 'Acme ERP' --server <server-id> --repo https://git.example.com/acme/addons.git --erp-version 17.0")
    .action(async (opts: CreateOptions) => {
      const ctx = context();
      const body = {
        name: opts.name,
        server_id: opts.server,
        ...(opts.repo !== undefined ? { git_repo_url: opts.repo } : {}),
        ...(opts.branch !== undefined ? { default_branch: opts.branch } : {}),
        ...(opts.erpVersion !== undefined ? { erp_version: opts.erpVersion } : {}),
      };
      let project: ProjectView;
      if (ctx.credentials().kind === "api_key") project = await ok(ctx.public().POST("/projects", { body }));
      else {
        const api = ctx.platform();
        const organization_id = await organizationId(api, opts.org);
        project = await ok(api.POST("/organizations/{organization_id}/projects", { params: { path: { organization_id } }, body }));
      }
      showProject(ctx, project);
    });

  projects
    .command("update <project>")
    .description("Change a project's name, default branch, repository or development settings")
    .option("--name <name>", "a new name")
    .option("--branch <branch>", "a new default branch")
    .option("--repo <url>", "a new repository URL")
    .option("--no-repo", "remove the repository URL")
    .option("--development-server <id|none>", "the server a push to a branch without an environment creates a development environment on (none: off)")
    .option("--development-limit <n>", "at most this many development environments run at once (1 to 20); the oldest idle one is stopped for a new one", wholeNumber)
    .addHelpText(
      "after",
      "\nExamples:\n  $ berth projects update <project-id> --branch release\n  $ berth projects update <project-id> --no-repo\n  $ berth projects update <project-id> --development-server <server-id> --development-limit 5",
    )
    .action(async (id: string, opts: UpdateOptions) => {
      const ctx = context();
      const body = {
        ...(opts.name !== undefined ? { name: opts.name } : {}),
        ...(opts.branch !== undefined ? { default_branch: opts.branch } : {}),
        ...(opts.repo !== undefined ? { git_repo_url: opts.repo === false ? null : opts.repo } : {}),
        ...developmentBody(opts),
      };
      if (Object.keys(body).length === 0) {
        throw new CliError("Nothing to change: pass --name, --branch, --repo, --no-repo, --development-server or --development-limit.", EXIT.usage, "nothing_to_change");
      }
      const project =
        ctx.credentials().kind === "api_key"
          ? await ok(ctx.public().PATCH("/projects/{id}", { params: { path: { id } }, body }))
          : await ok(ctx.platform().PATCH("/projects/{project_id}", { params: { path: { project_id: id } }, body }));
      showProject(ctx, project);
    });

  projects
    .command("delete <project>")
    .description("Delete a project (refused while one of its environments runs)")
    .option("-y, --yes", "do not ask for confirmation (needed without a terminal)")
    .addHelpText("after", "\nExample:\n  $ berth projects delete <project-id> --yes")
    .action(async (id: string, opts: { yes?: boolean }) => {
      const ctx = context();
      await confirm(`Delete project ${id}?`, opts.yes);
      if (ctx.credentials().kind === "api_key") await ok(ctx.public().DELETE("/projects/{id}", { params: { path: { id }, header: { "x-confirm-delete": "true" } } }));
      else await ok(ctx.platform().DELETE("/projects/{project_id}", { params: { path: { project_id: id } } }));
      ctx.out.result({ id, deleted: true }, () => ctx.out.line(`Deleted project ${id}.`));
    });
}
