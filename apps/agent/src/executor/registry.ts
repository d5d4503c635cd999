// The command types this build runs. A type missing here is rejected as
// `unsupported_command` before it is accepted, and is not announced in `hello`.
import type { Clock } from "../clock.ts";
import type { Journal } from "../journal/journal-types.ts";
import { createAgentUpdateHandler, type SelfUpdateDeps } from "./agent-update/agent-update.ts";
import { createBackupHandler } from "./backup/backup.ts";
import { createDeployHandler } from "./deploy/deploy.ts";
import { createDestroyHandler } from "./lifecycle/destroy.ts";
import { createDiagnosticsHandler } from "./support/diagnostics.ts";
import { createEnvironmentLocks } from "./runner/environment-lock.ts";
import type { ExecutorDeps, MailCatcherAddress, PreDeploySettings, TimingOverrides } from "./runner/executor-deps.ts";
import type { HandlerRegistry } from "./runner/handler-types.ts";
import { createLifecycleHandler } from "./lifecycle/lifecycle.ts";
import { createRouteHandler } from "./lifecycle/route.ts";
import { createLogsTailHandler } from "./support/logs-tail.ts";
import { createKeysUpdateHandler, type PinnedKeys } from "./agent-update/keys-update.ts";
import { createRestoreHandler } from "./backup/restore.ts";
import { DEFAULT_PROXY_HOST } from "../proxy/proxy-container.ts";
import { createReverseProxy, type ReverseProxy } from "../proxy/reverse-proxy.ts";

export interface RegistryDeps {
  journal: Pick<Journal, "stats">;
  stateDir: string;
  startedAt: Date;
  clock: Clock;
  /** Extra labels on every Docker object the handlers create (tests mark theirs). */
  extraLabels?: Readonly<Record<string, string>>;
  timing?: TimingOverrides;
  /** Given, the agent accepts keys.update (the running daemon); tests may leave it out. */
  pinnedKeys?: PinnedKeys;
  /** Given, the agent accepts agent.update (the installed single executable only). */
  selfUpdate?: SelfUpdateDeps;
  /** The server's reverse proxy; absent: one with the default settings that reports nowhere. */
  proxy?: ReverseProxy;
  /** Pre-deploy snapshots: how many are kept, and whether they are taken at all (benchmarks only turn them off). */
  preDeploy?: PreDeploySettings;
  /** The control plane's URL (http base): where backups are uploaded to and fetched from. */
  controlPlaneUrl?: string;
  /** Uploaded backups kept on this server per environment (BERTH_BACKUPS_KEEP_LOCAL, default 2). */
  backupsKeptLocally?: number;
  /** The server's mail catcher (mail/); absent: none runs, and a deploy that catches mail fails. */
  mail?: MailCatcherAddress;
}

export function createRegistry(deps: RegistryDeps): HandlerRegistry {
  // One lock table for all handlers: one operation at a time per environment.
  const executor: ExecutorDeps = {
    stateDir: deps.stateDir,
    clock: deps.clock,
    locks: createEnvironmentLocks(),
    proxy:
      deps.proxy ??
      createReverseProxy({ stateDir: deps.stateDir, host: DEFAULT_PROXY_HOST, ...(deps.extraLabels ? { labels: deps.extraLabels } : {}) }),
    ...(deps.extraLabels === undefined ? {} : { extraLabels: deps.extraLabels }),
    ...(deps.timing === undefined ? {} : { timing: deps.timing }),
    ...(deps.preDeploy === undefined ? {} : { preDeploy: deps.preDeploy }),
    ...(deps.controlPlaneUrl === undefined ? {} : { controlPlaneUrl: deps.controlPlaneUrl }),
    ...(deps.backupsKeptLocally === undefined ? {} : { backupsKeptLocally: deps.backupsKeptLocally }),
    ...(deps.mail === undefined ? {} : { mail: deps.mail }),
  };
  return {
    deploy: createDeployHandler(executor, "deploy"),
    redeploy: createDeployHandler(executor, "redeploy"),
    restart: createLifecycleHandler(executor, "restart"),
    start: createLifecycleHandler(executor, "start"),
    stop: createLifecycleHandler(executor, "stop"),
    destroy: createDestroyHandler(executor),
    backup: createBackupHandler(executor),
    restore: createRestoreHandler(executor),
    diagnostics: createDiagnosticsHandler(deps),
    "logs.tail": createLogsTailHandler(executor),
    route: createRouteHandler(executor),
    ...(deps.pinnedKeys ? { "keys.update": createKeysUpdateHandler(deps.pinnedKeys) } : {}),
    ...(deps.selfUpdate ? { "agent.update": createAgentUpdateHandler(deps.selfUpdate) } : {}),
  };
}
