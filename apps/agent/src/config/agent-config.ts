// The agent's settings: command-line flags first, then BERTH_* environment variables
// (settings.ts, where each is parsed), then defaults. Read once at start; anything wrong stops
// the agent with one clear line per problem and exit code 2 before it touches anything.
import { resolve } from "node:path";
import { readSettings, type SettingValues } from "@berth/protocol";
import type { LogLevelName } from "../logger.ts";
import { checkControlPlaneUrl, type ControlPlaneUrl } from "./control-plane-url.ts";
import { ConfigError, type Env } from "./config-error.ts";
import { PROXY_SETTING_KEYS, proxyHostSettings } from "./proxy-config.ts";
import { AGENT_SETTINGS } from "./settings.ts";
import type { ProxyHostSettings } from "../proxy/proxy-container.ts";
import type { MailCatcherSettings } from "../mail/mail-catcher-host.ts";

export { DEFAULT_DOCKER_SOCKET, DEFAULT_STATE_DIR } from "./settings.ts";

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
  /** The mail catcher of staging and development environments (BERTH_MAIL_NETWORK, BERTH_MAIL_PORT). */
  mail: MailCatcherSettings;
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


const BASE_KEYS = ["stateDir", "insecure", "dockerSocket", "logLevel"] as const;
const KEYS_OF: Record<AgentCommand, readonly (keyof typeof AGENT_SETTINGS)[]> = {
  enroll: [...BASE_KEYS, "url", "token"],
  run: [...BASE_KEYS, "backupsKeepLocal", ...PROXY_SETTING_KEYS, "mailNetwork", "mailPort"],
  status: BASE_KEYS,
  uninstall: BASE_KEYS,
};

/**
 * Throws a ConfigError with one line per problem (every one, not just the first); a former
 * name of a setting is reported through `warn`.
 */
export function loadConfig(command: AgentCommand, flags: Flags, env: Env, warn: (warning: string) => void = () => {}): AgentConfig {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(flags)) {
    if (value !== undefined && !FLAGS_OF[command].includes(name as keyof Flags)) problems.push(`--${name} is not an option of "${command}"`);
  }
  const flag = (name: keyof Flags): string | undefined => {
    const value = flags[name];
    if (typeof value !== "string") return undefined;
    if (value.trim() !== "") return value.trim();
    problems.push(`--${name} is empty`);
    return undefined;
  };
  const stateDirFlag = flag("state-dir");
  const urlFlag = flag("url");
  const tokenFlag = flag("token");
  const reading = readSettings(AGENT_SETTINGS, env, KEYS_OF[command]);
  for (const warning of reading.warnings) warn(warning);
  problems.push(...reading.problems);
  const v = reading.values as SettingValues<typeof AGENT_SETTINGS>;
  if (problems.length > 0) throw new ConfigError(problems);

  const base: BaseConfig = {
    stateDir: stateDirFlag === undefined ? v.stateDir : resolve(stateDirFlag),
    insecure: flags.insecure === true || v.insecure,
    dockerSocket: v.dockerSocket,
    logLevel: v.logLevel,
  };

  if (command === "run") {
    const keep = v.backupsKeepLocal;
    return { command, ...base, proxy: proxyHostSettings(v), mail: { network: v.mailNetwork, port: v.mailPort }, ...(keep === undefined ? {} : { backupsKeptLocally: keep }) };
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

  const rawUrl = urlFlag ?? v.url;
  const token = tokenFlag ?? v.token;
  const checked = rawUrl === undefined ? undefined : checkControlPlaneUrl(rawUrl, base.insecure);
  if (rawUrl === undefined) problems.push("enroll needs the control plane URL: --url https://... (or BERTH_URL)");
  else if (checked?.ok === false) problems.push(checked.message);
  // BERTH_TOKEN keeps the token out of the process list, where --token is visible.
  if (token === undefined) problems.push("enroll needs the one-time enrolment token: --token TOKEN (or BERTH_TOKEN)");
  if (problems.length > 0 || checked?.ok !== true || token === undefined) throw new ConfigError(problems);
  return { command, ...base, url: checked.url, token, force: flags.force === true };
}
