// `berth logs <deployment-id> [--follow] [--limit n]`: a deployment's log lines so far, and
// with --follow the new ones live until it ends (same stream and resume as deploy --follow).
import type { Command } from "commander";
import type { Context } from "../context.ts";
import { deploymentSource } from "../deployments.ts";
import { CliError, EXIT } from "../errors.ts";
import { followDeployment } from "../follow.ts";

export function registerLogs(program: Command, context: () => Context): void {
  program
    .command("logs")
    .description("Show a deployment's log lines")
    .argument("<deployment-id>", "the deployment")
    .option("-f, --follow", "keep printing new lines until the deployment ends; the exit code is its result")
    .option("-n, --limit <n>", "only the last n stored lines", (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new CliError(`--limit must be a whole number of at least 1, not ${JSON.stringify(v)}.`, EXIT.usage, "invalid_limit");
      return n;
    })
    .addHelpText("after", "\nExamples:\n  $ berth logs <deployment-id> --limit 100\n  $ berth logs <deployment-id> --follow      # until it ends; the exit code is its result")
    .action(async (id: string, opts: { follow?: boolean; limit?: number }) => {
      const ctx = context();
      if (opts.follow) {
        await followDeployment(ctx, id, opts.limit !== undefined ? { tail: opts.limit } : {});
        return;
      }
      const out = ctx.out;
      const all = await deploymentSource(ctx).logs(id);
      const lines = opts.limit !== undefined ? all.slice(-opts.limit) : all;
      out.result(lines, () => {
        if (lines.length === 0) out.note("No log lines yet.");
        for (const l of lines) out.line(`${out.paint("dim", l.timestamp.slice(11, 19))} ${l.level === "error" ? out.paint("red", "ERROR ") : l.level === "warning" ? out.paint("yellow", "WARN ") : ""}${l.message}`);
      });
    });
}
