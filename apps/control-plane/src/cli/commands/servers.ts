// `berth servers list|show|create`: the machines environments run on. Neither API changes or
// deletes a server, so neither does the CLI. With an API key over the public API (/servers),
// with a session over the platform API (/organizations/{id}/servers, no read-one endpoint).
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { ORG_OPTION, organizationId, organizationIds } from "../organizations.ts";
import type { Column } from "../output.ts";
import { allPages } from "../pages.ts";

interface ServerView {
  id: string;
  name: string;
  status: string;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  environment_count: number;
  hostname?: string | null;
  provider?: string;
  region?: string | null;
  agent_version: string | null;
  last_seen_at: string | null;
}

const columns: Column<ServerView>[] = [
  { header: "id", get: (s) => s.id },
  { header: "name", get: (s) => s.name },
  { header: "status", get: (s) => s.status },
  { header: "cpu", get: (s) => s.cpu_cores },
  { header: "ram mb", get: (s) => s.ram_mb },
  { header: "disk gb", get: (s) => s.disk_gb },
  { header: "environments", get: (s) => s.environment_count },
];

async function listServers(ctx: Context, org: string | undefined): Promise<ServerView[]> {
  if (ctx.credentials().kind === "api_key") return allPages((query) => ok(ctx.public().GET("/servers", { params: { query } })));
  const api = ctx.platform();
  const organization_id = await organizationId(api, org);
  return (await ok(api.GET("/organizations/{organization_id}/servers", { params: { path: { organization_id } } }))).data;
}

async function findServer(ctx: Context, id: string, org: string | undefined): Promise<ServerView> {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().GET("/servers/{id}", { params: { path: { id } } }));
  const api = ctx.platform();
  for (const organization_id of await organizationIds(api, org)) {
    const found = (await ok(api.GET("/organizations/{organization_id}/servers", { params: { path: { organization_id } } }))).data.find((s) => s.id === id);
    if (found) return found;
  }
  throw new CliError(`No server ${id} that you can see.`, EXIT.failed, "server_not_found");
}

export function registerServers(program: Command, context: () => Context): void {
  const servers = program
    .command("servers")
    .description("Servers: the machines your environments run on, each with a Berth agent")
    .addHelpText("after", "\nExamples:\n  $ berth servers list\n  $ berth servers create --name web-1");

  servers
    .command("list")
    .description("List the servers, with their size and status")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth servers list --json")
    .action(async (opts: { org?: string }) => {
      const ctx = context();
      const rows = await listServers(ctx, opts.org);
      ctx.out.result(rows, () => ctx.out.table(rows, columns, "No servers yet: add one with `berth servers create --name <name>`."));
    });

  servers
    .command("show <server>")
    .description("Show one server")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth servers show <server-id>")
    .action(async (id: string, opts: { org?: string }) => {
      const ctx = context();
      const s = await findServer(ctx, id, opts.org);
      ctx.out.result(s, () =>
        ctx.out.record([
          ["ID", s.id],
          ["Name", s.name],
          ["Status", s.status],
          ["Host name", s.hostname],
          ["Provider", s.provider],
          ["Region", s.region],
          ["Size", `${s.cpu_cores} cores, ${s.ram_mb} MB RAM, ${s.disk_gb} GB disk`],
          ["Environments", s.environment_count],
          ["Agent version", s.agent_version],
          ["Last seen", s.last_seen_at],
        ]),
      );
    });

  servers
    .command("create")
    .description("Add a server: prints the one-time command that installs and enrols its agent")
    .requiredOption("--name <name>", "the server's name")
    .option("--provider <provider>", "where it runs, as free text (API keys only)")
    .option("--region <region>", "its region (API keys only)")
    .option(...ORG_OPTION)
    .addHelpText("after", "\nExample:\n  $ berth servers create --name web-1    # then run the printed command on the server")
    .action(async (opts: { name: string; provider?: string; region?: string; org?: string }) => {
      const ctx = context();
      let result: { server: { id: string; name: string; status: string }; token: string | null; expires_at: string; install_command: string | null; answer: unknown };
      if (ctx.credentials().kind === "api_key") {
        const body = { name: opts.name, ...(opts.provider ? { provider: opts.provider } : {}), ...(opts.region ? { region: opts.region } : {}) };
        const r = await ok(ctx.public().POST("/servers", { body }));
        result = { server: r.server, ...r.enrollment, answer: r };
      } else {
        if (opts.provider || opts.region) throw new CliError("--provider and --region are taken with an API key only (the public API).", EXIT.usage, "option_not_supported");
        const api = ctx.platform();
        const organization_id = await organizationId(api, opts.org);
        const r = await ok(api.POST("/organizations/{organization_id}/servers", { params: { path: { organization_id } }, body: { name: opts.name } }));
        result = { server: r.server, token: r.enrollment.token, expires_at: r.enrollment.expires_at, install_command: r.install_command, answer: r };
      }
      ctx.out.result(result.answer, () => {
        ctx.out.record([
          ["ID", result.server.id],
          ["Name", result.server.name],
          ["Status", result.server.status],
          ["Enrolment token", result.token],
          ["Valid until", result.expires_at],
        ]);
        if (result.install_command) ctx.out.line(`\nOn the server, as root (the token is shown only once):\n  ${result.install_command}`);
      });
    });
}
