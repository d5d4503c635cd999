// `berth deploy <environment-id> [--branch b] [--follow]`: a full deployment of the
// environment. A signed-in person deploys through the platform API (always, even when the
// environment already runs); an API key through the public API's action, with an
// Idempotency-Key of its own per invocation.
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { idempotent, started } from "../operations.ts";

export function registerDeploy(program: Command, context: () => Context): void {
  program
    .command("deploy")
    .description("Deploy an environment: pull its code, update its containers, upgrade its modules")
    .argument("<environment-id>", "the environment")
    .option("--branch <branch>", "the Git branch to deploy (default: the environment's)")
    .option("-f, --follow", "show the steps and logs live; the exit code is the deployment's result")
    .addHelpText(
      "after",
      `
Examples:
  $ berth deploy 3f6c…                      # prints the deployment id
  $ berth deploy 3f6c… --branch main --follow
  $ berth deploy 3f6c… --follow --json      # one JSON object per line: step, log, result`,
    )
    .action(async (envId: string, opts: { branch?: string; follow?: boolean }) => {
      const ctx = context();
      if (ctx.credentials().kind === "api_key") {
        if (opts.branch) throw new CliError("--branch needs a signed-in person: an API key deploys the environment's own branch.", EXIT.usage, "branch_needs_session");
        const answer = await ok(ctx.public("berth deploy").POST("/environments/{id}/actions/deploy", { params: { path: { id: envId } }, body: {}, ...idempotent() }));
        return started(ctx, answer.task_id, answer, "Deployment", opts.follow);
      }
      const answer = await ok(
        ctx.platform("berth deploy").POST("/environments/{environment_id}/deploy", {
          params: { path: { environment_id: envId } },
          body: { force: true, ...(opts.branch ? { git_branch: opts.branch } : {}) },
        }),
      );
      if (!answer.deployment) throw new CliError(answer.message, EXIT.failed, "not_deployed");
      return started(ctx, answer.deployment.id, answer.deployment, "Deployment", opts.follow);
    });
}
