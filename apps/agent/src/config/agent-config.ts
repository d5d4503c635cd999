// The agent's settings: command-line flags first, then BERTH_* environment variables, then
// defaults. Parsed once at start; anything wrong stops the agent with one clear line and
// exit code 2 before it touches anything.
import { isAbsolute, resolve } from "node:path";
import { LOG_LEVEL_NAMES, type LogLevelName } from "../logger.ts";
import { checkControlPlaneUrl, type ControlPlaneUrl } from "./control-plane-url.ts";
import { ConfigError, type Env } from "./config-error.ts";
import { proxyHostFromEnv } from "./proxy-config.ts";
import type { ProxyHostSettings } from "../proxy/proxy-container.ts";


export const DEFAULT_STATE_DIR = "/var/lib/berth-agent";
export const DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock";

/** Exit code for "refused to start: the invocation or the setup is wrong"; nothing was done. */
export const EXIT_CONFIG = 2;


export const AGENT_COMMANDS = ["enroll", "run", "status", "uninstall"] as const;
export type AgentCommand = (typeof AGENT_COMMANDS)[number];

/** Flags as parsed from argv; undefined when not given. */
export interface Flags {
  url?: string;
  token?: string;
  "state-dir"?: string;
  insecure?: boolean;
  force?: boolean;
  json?: boolean;
  purge?: boolean;
  "remove-containers"?: boolean;
  "print-script"?: boolean;
}

// Which flags each command takes; any other is a mistake worth stopping for.
const FLAGS_OF: Record<AgentCommand, readonly (keyof Flags)[]> = {
  enroll: ["url", "token", "state-dir", "insecure", "force"],
  run: ["state-dir", "insecure"],
  status: ["state-dir", "json"],
  uninstall: ["purge", "remove-containers", "print-script"],
};

export interface BaseConfig {
  stateDir: string;
  insecure: boolean;
  dockerSocket: string;
  logLevel: LogLevelName;
}

export interface EnrollConfig extends BaseConfig {
  command: "enroll";
  url: ControlPlaneUrl;
  token: string;
  force: boolean;
}

export interface RunConfig extends BaseConfig {
  command: "run";
  proxy: ProxyHostSettings;
  /** BERTH_BACKUPS_KEEP_LOCAL: uploaded backups each environment keeps on this server (0-100; unset: 2). */
  backupsKeptLocally?: number;
}

export interface StatusConfig extends BaseConfig {
  command: "status";
  json: boolean;
}

export interface UninstallConfig extends BaseConfig {
  command: "uninstall";
  purge: boolean;
  removeContainers: boolean;
  /** Print the uninstaller instead of running it (install.sh keeps a root-owned copy). */
  printScript: boolean;
}

export type AgentConfig = EnrollConfig | RunConfig | StatusConfig | UninstallConfig;


/** Throws a ConfigError with a one-line message. */
export function loadConfig(command: AgentCommand, flags: Flags, env: Env): AgentConfig {
  for (const [name, value] of Object.entries(flags)) {
    if (value !== undefined && !FLAGS_OF[command].includes(name as keyof Flags)) {
      throw new ConfigError(`--${name} is not an option of "${command}"`);
    }
  }
  const base: BaseConfig = {
    stateDir: resolve(
      nonEmpty("--state-dir", flags["state-dir"]) ?? nonEmpty("BERTH_STATE_DIR", env.BERTH_STATE_DIR) ?? DEFAULT_STATE_DIR,
    ),
    insecure: flags.insecure === true || parseBoolean("BERTH_INSECURE", env.BERTH_INSECURE),
    dockerSocket: dockerSocket(env.BERTH_DOCKER_SOCKET),
    logLevel: logLevel(env.BERTH_LOG_LEVEL),
  };

  if (command === "run") {
    const keep = backupsKeptLocally(env.BERTH_BACKUPS_KEEP_LOCAL);
    return { command, ...base, proxy: proxyHostFromEnv(env), ...(keep === undefined ? {} : { backupsKeptLocally: keep }) };
  }
  if (command === "status") return { command, ...base, json: flags.json === true };
  if (command === "uninstall") {
    return {
      command,
      ...base,
      purge: flags.purge === true,
      removeContainers: flags["remove-containers"] === true,
      printScript: flags["print-script"] === true,
    };
  }

  const rawUrl = nonEmpty("--url", flags.url) ?? nonEmpty("BERTH_URL", env.BERTH_URL);
  if (rawUrl === undefined) throw new ConfigError("enroll needs the control plane URL: --url https://... (or BERTH_URL)");
  const checked = checkControlPlaneUrl(rawUrl, base.insecure);
  if (!checked.ok) throw new ConfigError(checked.message);
  // BERTH_TOKEN keeps the token out of the process list, where --token is visible.
  const token = nonEmpty("--token", flags.token) ?? nonEmpty("BERTH_TOKEN", env.BERTH_TOKEN);
  if (token === undefined) throw new ConfigError("enroll needs the one-time enrolment token: --token TOKEN (or BERTH_TOKEN)");
  return { command, ...base, url: checked.url, token, force: flags.force === true };
}

function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === "") throw new ConfigError(`${name} is empty`);
  return value.trim();
}

function parseBoolean(name: string, value: string | undefined): boolean {
  if (value === undefined || value === "") return false;
  const lower = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(lower)) return true;
  if (["0", "false", "no", "off"].includes(lower)) return false;
  throw new ConfigError(`${name} must be true or false (got "${value}")`);
}

function backupsKeptLocally(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  if (!/^[0-9]{1,3}$/.test(value.trim()) || Number(value) > 100) throw new ConfigError(`BERTH_BACKUPS_KEEP_LOCAL must be a whole number from 0 to 100 (got "${value}")`);
  return Number(value);
}

function dockerSocket(value: string | undefined): string {
  if (value === undefined || value === "") return DEFAULT_DOCKER_SOCKET;
  if (!isAbsolute(value)) throw new ConfigError(`BERTH_DOCKER_SOCKET must be an absolute path (got "${value}")`);
  return value;
}

function logLevel(value: string | undefined): LogLevelName {
  if (value === undefined || value === "") return "info";
  const lower = value.toLowerCase();
  if ((LOG_LEVEL_NAMES as readonly string[]).includes(lower)) return lower as LogLevelName;
  throw new ConfigError(`BERTH_LOG_LEVEL must be one of ${LOG_LEVEL_NAMES.join(", ")} (got "${value}")`);
}
