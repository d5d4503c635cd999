// `berth`: the command line of Berth, over the same typed client as the dashboard
// (@berth/protocol/api-client). Run from a checkout with `npx berth`, or as the single
// executable `npm run build:cli` makes. Each command lives in commands/<topic>.ts and
// registers itself here; this file owns the global options, the help and the exit codes.
import { Command, CommanderError } from "commander";
import { registerActions } from "./commands/actions.ts";
import { registerBackups } from "./commands/backups.ts";
import { registerCompletion } from "./commands/completion.ts";
import { registerDeploy } from "./commands/deploy.ts";
import { registerEnvironments } from "./commands/environments.ts";
import { registerLogin } from "./commands/login.ts";
import { registerLogs } from "./commands/logs.ts";
import { registerMails } from "./commands/mails.ts";
import { registerMigrate } from "./commands/migrate.ts";
import { registerProjects } from "./commands/projects.ts";
import { registerServers } from "./commands/servers.ts";
import { Context, type GlobalOptions } from "./context.ts";
import { asCliError, EXIT, EXIT_CODES_HELP } from "./errors.ts";
import { Output } from "./output.ts";

export const CLI_VERSION = "0.1.0";

/** The whole command tree; `context` gives each action the global options' context. */
export function buildProgram(env: NodeJS.ProcessEnv = process.env): Command {
  const program = new Command("berth")
    .description("Run ERP deployments on servers you own: projects, environments, deploys, logs, backups and migrations.")
    .version(CLI_VERSION, "-v, --version")
    .option("--url <url>", "the control plane, e.g. https://berth.example.com (default: BERTH_URL, else the one of `berth login`)")
    .option("--json", "print results as JSON, for scripts (progress and errors go to stderr)")
    .option("--no-color", "no colours (also when the output is not a terminal, or NO_COLOR is set)")
    .showHelpAfterError("(add --help for usage)")
    .addHelpText(
      "after",
      `
Examples:
  $ berth login                                   # e-mail and password, stored in ~/.config/berth (0600)
  $ berth projects list
  $ berth deploy <environment-id> --follow        # live steps and logs; exit code from the result
  $ BERTH_URL=https://berth.example.com BERTH_API_KEY=svc_live_rw_… berth deploy <environment-id> --follow --json

Environment:
  BERTH_URL       the control plane (overrides the stored one)
  BERTH_API_KEY   an API key, used instead of the stored login (for CI jobs)
  BERTH_TOKEN     a session token, used instead of the stored login
  NO_COLOR        no colours

${EXIT_CODES_HELP}`,
    );
  const context = () => Context.from(program.opts<GlobalOptions>(), env);
  registerLogin(program, context);
  registerServers(program, context);
  registerProjects(program, context);
  registerEnvironments(program, context);
  registerDeploy(program, context);
  registerActions(program, context);
  registerLogs(program, context);
  registerMails(program, context);
  registerBackups(program, context);
  registerMigrate(program, context);
  registerCompletion(program, context);
  for (const cmd of allCommands(program)) cmd.exitOverride();
  return program;
}

export function allCommands(program: Command): Command[] {
  return [program, ...program.commands.flatMap((c) => allCommands(c))];
}

/** Runs the CLI and returns its exit code (tests call this; the bin exits with it). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const program = buildProgram(env);
  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end in a CommanderError too, with exit code 0; usage errors were printed.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const opts = program.opts<GlobalOptions>();
    const e = asCliError(err, opts.url ?? env.BERTH_URL);
    const out = Output.detect(opts, env);
    if (out.json) process.stderr.write(`${JSON.stringify({ error: e.code, message: e.message })}\n`);
    else out.error(e.message);
    return e.exitCode;
  }
}
