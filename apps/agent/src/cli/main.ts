// Parses the command line and hands over to the command. Returns the exit code rather than
// exiting, so tests run it in-process.
import { parseArgs } from "node:util";
import { AGENT_COMMANDS, EXIT_CONFIG, loadConfig, type AgentCommand } from "../config/agent-config.ts";
import { ConfigError } from "../config/config-error.ts";
import { AGENT_VERSION } from "../version.ts";
import type { CliIo } from "./cli-io.ts";
import { enrollCommand } from "./enroll-command.ts";
import { runCommand } from "./run-command.ts";
import { statusCommand } from "./status-command.ts";
import { uninstallCommand } from "./uninstall-command.ts";
import { USAGE } from "./usage.ts";

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: "string" },
        token: { type: "string" },
        "state-dir": { type: "string" },
        insecure: { type: "boolean" },
        force: { type: "boolean" },
        json: { type: "boolean" },
        purge: { type: "boolean" },
        "remove-containers": { type: "boolean" },
        "print-script": { type: "boolean" },
        version: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    io.err(`berth-agent: ${error instanceof Error ? error.message : String(error)} (see --help)`);
    return EXIT_CONFIG;
  }
  const { values, positionals } = parsed;
  if (values.version === true) {
    io.out(AGENT_VERSION);
    return 0;
  }
  if (values.help === true) {
    io.out(USAGE);
    return 0;
  }
  const [command, ...extra] = positionals;
  if (command === undefined || !(AGENT_COMMANDS as readonly string[]).includes(command)) {
    io.err(command === undefined ? USAGE : `berth-agent: unknown command "${command}" (see --help)`);
    return EXIT_CONFIG;
  }
  if (extra.length > 0) {
    io.err(`berth-agent: unexpected argument "${extra[0]}" (see --help)`);
    return EXIT_CONFIG;
  }

  const { version: _version, help: _help, ...flags } = values;
  let config;
  try {
    config = loadConfig(command as AgentCommand, flags, io.env, (warning) => io.err(`berth-agent: warning: ${warning}`));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) io.err(`berth-agent: ${problem}`);
    return EXIT_CONFIG;
  }
  switch (config.command) {
    case "enroll":
      return enrollCommand(config, io);
    case "run":
      return runCommand(config, io);
    case "status":
      return statusCommand(config, io);
    case "uninstall":
      return uninstallCommand(config, io);
  }
}
