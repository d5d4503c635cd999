// `berth environments copy-from <environment> --from <environment> [--latest] [--follow]`:
// replaces a staging or development environment's database and file store with a neutralised
// copy of another environment of its project (POST …/copy-from, either API), after a
// confirmation; --follow shows the copy operation's steps and logs until it ends.
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { idempotent, started } from "../operations.ts";
import { confirm } from "../prompt.ts";

export function registerCopyFrom(environments: Command, context: () => Context): void {
  environments
    .command("copy-from <environment>")
    .description("Replace a staging or development environment's data with a neutralised copy of another environment of its project")
    .requiredOption("--from <environment>", "the environment to copy (usually the project's production)")
    .option("--latest", "restore the source's latest backup in the backup store instead of copying it now")
    .option("-f, --follow", "show the steps and logs live; the exit code is the copy's result")
    .option("-y, --yes", "do not ask for confirmation (needed without a terminal)")
    .addHelpText("after", "\nExample:\n  $ berth environments copy-from <staging-id> --from <production-id> --yes --follow")
    .action(async (id: string, opts: { from: string; latest?: boolean; follow?: boolean; yes?: boolean }) => {
      const ctx = context();
      await confirm(`Replace environment ${id}'s database and files with a copy of ${opts.from}${opts.latest ? "'s latest backup" : " as it is now"}?`, opts.yes);
      const body = { from_environment_id: opts.from, backup: opts.latest ? ("latest" as const) : ("fresh" as const) };
      if (ctx.credentials().kind === "api_key") {
        const answer = await ok(ctx.public().POST("/environments/{id}/copy-from", { params: { path: { id } }, body, ...idempotent() }));
        return started(ctx, answer.task_id, answer, "Copy", opts.follow);
      }
      const answer = await ok(ctx.platform().POST("/environments/{env_id}/copy-from", { params: { path: { env_id: id } }, body }));
      return started(ctx, answer.deployment_id, answer, "Copy", opts.follow);
    });
}
