// The other operations: `berth restart|stop|start <environment-id>` and
// `berth rollback|retry|cancel <deployment-id>`. Each prints the new operation's id (or the
// API's answer with --json), or follows it with --follow. With an API key they use the
// public API (idempotent, as a CI job may repeat them), else the platform API.
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { idempotent, started } from "../operations.ts";

const ENVIRONMENT_ACTIONS = {
  restart: "Restart an environment's containers without redeploying",
  stop: "Stop an environment's containers (data is kept)",
  start: "Start a stopped environment",
} as const;

export function registerActions(program: Command, context: () => Context): void {
  for (const [action, description] of Object.entries(ENVIRONMENT_ACTIONS) as [keyof typeof ENVIRONMENT_ACTIONS, string][]) {
    program
      .command(action)
      .description(description)
      .argument("<environment-id>", "the environment")
      .option("-f, --follow", "show the steps and logs live; the exit code is the result")
      .addHelpText("after", `\nExamples:\n  $ berth ${action} <environment-id>\n  $ berth ${action} <environment-id> --follow --json   # NDJSON steps and logs, then the result`)
      .action(async (envId: string, opts: { follow?: boolean }) => {
        const ctx = context();
        const what = `${action[0]!.toUpperCase()}${action.slice(1)}`;
        if (ctx.credentials().kind === "api_key") {
          const answer = await ok(ctx.public(`berth ${action}`).POST(`/environments/{id}/actions/${action}`, { params: { path: { id: envId } }, ...idempotent() }));
          return started(ctx, answer.task_id, answer, what, opts.follow);
        }
        const answer = await ok(ctx.platform(`berth ${action}`).POST("/environments/{env_id}/actions/{action}", { params: { path: { env_id: envId, action } } }));
        return started(ctx, answer.id, answer, what, opts.follow);
      });
  }

  program
    .command("rollback")
    .description("Deploy again what a successful deployment ran (its code, image and configuration)")
    .argument("<deployment-id>", "the deployment to go back to")
    .option("-f, --follow", "show the steps and logs live; the exit code is the result")
    .addHelpText("after", "\nExamples:\n  $ berth rollback <deployment-id>\n  $ berth rollback <deployment-id> --follow")
    .action(async (id: string, opts: { follow?: boolean }) => {
      const ctx = context();
      if (ctx.credentials().kind === "api_key") {
        const answer = await ok(ctx.public("berth rollback").POST("/deployments/{id}/rollback", { params: { path: { id } }, ...idempotent() }));
        return started(ctx, answer.task_id, answer, "Rollback", opts.follow);
      }
      const record = await ok(ctx.platform("berth rollback").POST("/deployments/{deployment_id}/rollback", { params: { path: { deployment_id: id } } }));
      return started(ctx, record.id, record, "Rollback", opts.follow);
    });

  program
    .command("retry")
    .description("Run a failed deployment again, with the same code and configuration")
    .argument("<deployment-id>", "the failed deployment")
    .option("-f, --follow", "show the steps and logs live; the exit code is the result")
    .addHelpText("after", "\nExamples:\n  $ berth retry <deployment-id>\n  $ berth retry <deployment-id> --follow")
    .action(async (id: string, opts: { follow?: boolean }) => {
      const ctx = context();
      if (ctx.credentials().kind === "api_key") {
        const answer = await ok(ctx.public("berth retry").POST("/deployments/{id}/retry", { params: { path: { id } }, ...idempotent() }));
        return started(ctx, answer.task_id, answer, "Retry", opts.follow);
      }
      const record = await ok(ctx.platform("berth retry").POST("/deployments/{deployment_id}/retry", { params: { path: { deployment_id: id } } }));
      return started(ctx, record.id, record, "Retry", opts.follow);
    });

  program
    .command("cancel")
    .description("Cancel a deployment that has not finished (a running one stops at its next step)")
    .argument("<deployment-id>", "the deployment")
    .addHelpText("after", "\nExample:\n  $ berth cancel <deployment-id>")
    .action(async (id: string) => {
      const ctx = context();
      const out = ctx.out;
      if (ctx.credentials().kind === "api_key") {
        const task = await ok(ctx.public("berth cancel").POST("/deployments/{id}/cancel", { params: { path: { id } }, ...idempotent() }));
        return out.result(task, () => out.line(`Deployment ${id} cancelled.`));
      }
      const answer = await ok(ctx.platform("berth cancel").POST("/deployments/{deployment_id}/cancel", { params: { path: { deployment_id: id } } }));
      out.result({ id, ...answer }, () => out.line(`Deployment ${id} cancelled.`));
    });
}
