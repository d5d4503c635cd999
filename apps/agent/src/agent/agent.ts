// The running agent, assembled from its parts: the command runner, the link and the stats
// sampler around one journal and one Docker client. Every dependency comes in as an
// argument, so tests build real agents against a fake control plane and temp journals.
import type { KeyObject, SigningKey } from "@berth/protocol";
import { createControlPlaneTime, systemClock, type Clock, type ControlPlaneTime } from "../clock.ts";
import type { DockerClient } from "../docker/docker-client.ts";
import { createEventOutbox, type EventOutbox } from "../events/event-outbox.ts";
import { createCommandRunner, type CommandRunner } from "../executor/runner/command-runner.ts";
import { capabilitiesOf, type HandlerRegistry } from "../executor/runner/handler-types.ts";
import type { SelfUpdateDeps } from "../executor/agent-update/agent-update.ts";
import { createRegistry } from "../executor/registry.ts";
import type { Journal } from "../journal/journal-types.ts";
import type { BackoffOptions } from "../link/backoff.ts";
import type { EventSenderOptions } from "../link/event-sender.ts";
import { createLink, type Link } from "../link/link.ts";
import type { WebSocketConstructor } from "../link/session.ts";
import type { Logger } from "../logger.ts";
import type { LinkStatus } from "../state/link-status-file.ts";
import { createStatsSampler, type StatsSampler } from "../stats/stats-sampler.ts";
import { AGENT_VERSION } from "../version.ts";
import { DEFAULT_PROXY_HOST, type ProxyHostSettings } from "../proxy/proxy-container.ts";
import { startProxyMonitor } from "../proxy/proxy-monitor.ts";
import { createReverseProxy } from "../proxy/reverse-proxy.ts";
import { startCommandPruning } from "./command-pruning.ts";
import { startMailCatcher, type MailCatcher, type MailCatcherSettings } from "../mail/mail-catcher-host.ts";

export interface AgentDeps {
  /** Full ws:// or wss:// URL of the connect endpoint. */
  url: string;
  serverId: string;
  privateKey: KeyObject;
  trustedKeys: ReadonlyMap<string, KeyObject>;
  /** Given (with a mutable trustedKeys map), the agent accepts keys.update and persists through it. */
  saveSigningKeys?: (keys: SigningKey[]) => void;
  journal: Journal;
  docker: DockerClient;
  stateDir: string;
  WebSocket: WebSocketConstructor;
  logger: Logger;
  clock?: Clock;
  /**
   * The control plane's time, set at each handshake; commands are judged by it. Pass the one
   * the journal stamps events with, so logs carry it too. Default: one made from `clock`.
   */
  controlPlaneTime?: ControlPlaneTime;
  /** Defaults to every handler this build has (createRegistry). */
  registry?: HandlerRegistry;
  /** Null disables the sampler (tests that count events). Default every 10 s. */
  statsIntervalMs?: number | null;
  backoff?: BackoffOptions;
  stableAfterMs?: number;
  handshakeTimeoutMs?: number;
  sender?: EventSenderOptions;
  maxRunMs?: number;
  onStatus?: (status: LinkStatus) => void;
  /** Given, the agent accepts agent.update and replaces this executable. */
  selfUpdate?: SelfUpdateDeps;
  /** The reverse proxy's settings on this server (BERTH_PROXY_*); defaults otherwise. */
  proxyHost?: ProxyHostSettings;
  /** The control plane's http(s) base URL: backups are uploaded to and fetched from it. */
  controlPlaneUrl?: string;
  /** Uploaded backups kept on this server per environment (default 2). */
  backupsKeptLocally?: number;
  /** The mail catcher of staging and development environments (BERTH_MAIL_NETWORK, BERTH_MAIL_PORT); absent: none runs. */
  mailCatcher?: MailCatcherSettings;
}

export interface ShutdownOptions {
  /** How long a running command may take to finish. Default 25 s. */
  commandWaitMs?: number;
  /** How long to wait for the last events' ack before closing. Default 5 s. */
  flushMs?: number;
}

export interface Agent {
  /** Reports commands a previous run left unfinished, then connects and starts sampling. */
  start(): void;
  shutdown(options?: ShutdownOptions): Promise<void>;
  readonly link: Link;
  readonly commands: CommandRunner;
  readonly outbox: EventOutbox;
  readonly sampler: StatsSampler | null;
}

export function createAgent(deps: AgentDeps): Agent {
  const clock = deps.clock ?? systemClock;
  const controlPlaneTime = deps.controlPlaneTime ?? createControlPlaneTime(clock);
  const { journal, logger } = deps;
  const outbox = createEventOutbox(journal);
  const pinnedKeys =
    deps.saveSigningKeys && deps.trustedKeys instanceof Map ? { trusted: deps.trustedKeys, save: deps.saveSigningKeys } : undefined;
  const proxy = createReverseProxy({
    stateDir: deps.stateDir,
    host: deps.proxyHost ?? DEFAULT_PROXY_HOST,
    emit: (event) => outbox.append(event),
  });
  let mailCatcher: MailCatcher | null = null;
  const mail = { address: () => mailCatcher?.address() ?? null };
  const registry =
    deps.registry ??
    createRegistry({
      journal,
      stateDir: deps.stateDir,
      startedAt: clock.now(),
      clock,
      proxy,
      ...(deps.mailCatcher ? { mail } : {}),
      ...(pinnedKeys ? { pinnedKeys } : {}),
      ...(deps.selfUpdate ? { selfUpdate: deps.selfUpdate } : {}),
      ...(deps.controlPlaneUrl === undefined ? {} : { controlPlaneUrl: deps.controlPlaneUrl }),
      ...(deps.backupsKeptLocally === undefined ? {} : { backupsKeptLocally: deps.backupsKeptLocally }),
    });
  const commands = createCommandRunner({
    journal,
    outbox,
    registry,
    trustedKeys: deps.trustedKeys,
    serverId: deps.serverId,
    docker: deps.docker,
    clock,
    controlPlaneTime,
    logger,
    ...(deps.maxRunMs === undefined ? {} : { maxRunMs: deps.maxRunMs }),
  });
  const link = createLink({
    url: deps.url,
    serverId: deps.serverId,
    privateKey: deps.privateKey,
    agentVersion: AGENT_VERSION,
    capabilities: capabilitiesOf(registry),
    journal,
    outbox,
    commands,
    WebSocket: deps.WebSocket,
    clock,
    controlPlaneTime,
    logger,
    ...(deps.backoff === undefined ? {} : { backoff: deps.backoff }),
    ...(deps.stableAfterMs === undefined ? {} : { stableAfterMs: deps.stableAfterMs }),
    ...(deps.handshakeTimeoutMs === undefined ? {} : { handshakeTimeoutMs: deps.handshakeTimeoutMs }),
    ...(deps.sender === undefined ? {} : { sender: deps.sender }),
    ...(deps.onStatus === undefined ? {} : { onStatus: deps.onStatus }),
  });
  const statsIntervalMs = deps.statsIntervalMs === undefined ? 10_000 : deps.statsIntervalMs;
  const sampler =
    statsIntervalMs === null
      ? null
      : createStatsSampler({ outbox, docker: deps.docker, clock, logger, intervalMs: statsIntervalMs });
  let shutdown: Promise<void> | null = null;
  let pruning: { stop(): void } | null = null;
  let proxyMonitor: { stop(): Promise<void> } | null = null;

  return {
    start() {
      const interrupted = commands.finishInterrupted();
      if (interrupted > 0) logger.warn({ count: interrupted }, "reported commands interrupted by the last restart");
      pruning = startCommandPruning({ journal, clock, controlPlaneTime, logger });
      link.start();
      sampler?.start();
      proxyMonitor = startProxyMonitor({ proxy, docker: deps.docker, logger });
      if (deps.mailCatcher) {
        mailCatcher = startMailCatcher({ docker: deps.docker, stateDir: deps.stateDir, settings: deps.mailCatcher, emit: (event) => outbox.append(event), logger });
      }
    },
    shutdown(options = {}) {
      shutdown ??= (async () => {
        logger.info({}, "shutting down");
        commands.stopAccepting();
        pruning?.stop();
        await sampler?.stop();
        await proxyMonitor?.stop();
        await mailCatcher?.stop();
        const drained = await commands.drain(options.commandWaitMs ?? 25_000);
        if (!drained) {
          logger.warn(
            { running: commands.running() },
            "commands still running at shutdown: left journalled, reported as agent_restarted at the next start",
          );
        }
        await link.stop({ flushMs: options.flushMs ?? 5_000 });
        commands.close();
      })();
      return shutdown;
    },
    link,
    commands,
    outbox,
    sampler,
  };
}
