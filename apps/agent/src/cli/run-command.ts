// `berth-agent run`: the daemon. Loads the identity, opens the journal, connects, and on
// SIGINT/SIGTERM shuts down in order: no new commands, running ones get time to finish,
// the last events get time to be acknowledged, the link closes normally, the journal closes.
import { createControlPlaneTime, systemClock } from "../clock.ts";
import { EXIT_CONFIG, type RunConfig } from "../config/agent-config.ts";
import { checkControlPlaneUrl, connectUrl } from "../config/control-plane-url.ts";
import { createAgent } from "../agent/agent.ts";
import { createDockerClient } from "../docker/docker-client.ts";
import { openJournal } from "../journal/journal.ts";
import { pageOutOnce } from "../native/page-out.ts";
import { JournalError } from "../journal/journal-error.ts";
import type { Journal } from "../journal/journal-types.ts";
import { createLogger } from "../logger.ts";
import { loadIdentity, saveSigningKeys, StateError, type LoadedIdentity } from "../state/identity.ts";
import { writeLinkStatus, type LinkStatus } from "../state/link-status-file.ts";
import { ensureStateDir, statePaths } from "../state/state-dir.ts";
import { AGENT_VERSION } from "../version.ts";
import { EXIT_UPDATED, type SelfUpdateDeps } from "../executor/agent-update/agent-update.ts";
import { seaAssets } from "../native/sea.ts";
import { clearUpdateMarker, readUpdateMarker } from "../state/update-marker.ts";
import type { CliIo } from "./cli-io.ts";

export async function runCommand(config: RunConfig, io: CliIo): Promise<number> {
  const paths = statePaths(config.stateDir);
  let loaded: LoadedIdentity;
  try {
    loaded = loadIdentity(paths);
    ensureStateDir(paths.dir);
  } catch (error) {
    io.err(`berth-agent: ${error instanceof StateError || error instanceof Error ? error.message : String(error)}`);
    return EXIT_CONFIG;
  }
  const url = checkControlPlaneUrl(loaded.identity.control_plane_url, config.insecure);
  if (!url.ok) {
    io.err(`berth-agent: ${url.message} (the URL comes from ${paths.identity})`);
    return EXIT_CONFIG;
  }
  // Events are stamped with the control plane's time, as commands are judged by it (clock.ts).
  const controlPlaneTime = createControlPlaneTime(systemClock);
  let journal: Journal;
  try {
    journal = openJournal({ path: paths.journal, now: controlPlaneTime.now });
  } catch (error) {
    io.err(`berth-agent: cannot open the journal ${paths.journal}: ${error instanceof Error ? error.message : String(error)}`);
    return mayPass(error) ? 1 : EXIT_CONFIG;
  }

  const logger = createLogger(config.logLevel);
  const pageOut = pageOutOnce({ keepDir: paths.dir, logger });
  let statusWriteFailed = false;
  let updateChecked = false;
  const recordStatus = (status: LinkStatus) => {
    // A self-update is committed once the new executable reaches the control plane.
    if (status.state === "ready" && !updateChecked) {
      updateChecked = true;
      commitUpdate(paths.dir, logger);
      // Start-up is over once linked: what only it needed of the executable can go.
      pageOut.start();
    }
    try {
      writeLinkStatus(paths.linkStatus, status, systemClock.now());
    } catch (error) {
      // The status file is for `status` only; failing to write it must not stop the agent.
      if (!statusWriteFailed) logger.warn({ error: String(error) }, "cannot write the link status file");
      statusWriteFailed = true;
    }
  };

  let restartRequested: () => void = () => {};
  const restart = new Promise<"updated">((resolve) => {
    restartRequested = () => resolve("updated");
  });
  // Only the installed single executable replaces itself; from source there is none.
  const selfUpdate: SelfUpdateDeps | undefined =
    seaAssets() === null
      ? undefined
      : { executable: process.execPath, stateDir: paths.dir, insecure: config.insecure, fetch: io.fetch, requestRestart: () => restartRequested() };
  const agent = createAgent({
    controlPlaneTime,
    url: connectUrl(url.url, loaded.identity.connect_path),
    serverId: loaded.identity.server_id,
    privateKey: loaded.privateKey,
    trustedKeys: loaded.trustedKeys,
    saveSigningKeys: (keys) => {
      loaded.identity = saveSigningKeys(paths, loaded.identity, keys);
    },
    journal,
    docker: createDockerClient({ socketPath: config.dockerSocket }),
    stateDir: paths.dir,
    WebSocket: io.WebSocket,
    logger,
    onStatus: recordStatus,
    proxyHost: config.proxy,
    mailCatcher: config.mail,
    controlPlaneUrl: url.url.http,
    ...(config.backupsKeptLocally === undefined ? {} : { backupsKeptLocally: config.backupsKeptLocally }),
    ...(selfUpdate ? { selfUpdate } : {}),
  });

  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      resolve(signal);
      // A second signal means "now": the journal is crash-safe, so exiting is safe.
      process.once("SIGINT", () => process.exit(130));
      process.once("SIGTERM", () => process.exit(143));
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });

  agent.start();
  logger.info({ server_id: loaded.identity.server_id, url: url.url.http, version: AGENT_VERSION }, "agent started");
  const reason = await Promise.race([signalled, agent.link.ended, restart]);
  logger.info({ reason }, "stopping");
  pageOut.stop();
  if (reason === "updated") await reportedEverything(agent, journal);
  await agent.shutdown();
  journal.close();
  recordStatus(agent.link.status());
  logger.info({}, "stopped");
  if (reason === "updated") return EXIT_UPDATED;
  return reason === "replaced" ? 1 : 0;
}

/** Before restarting into an update: the update's own result reaches the control plane. */
async function reportedEverything(agent: ReturnType<typeof createAgent>, journal: Journal, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && (agent.commands.running().length > 0 || journal.stats().pendingCount > 0)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function commitUpdate(stateDir: string, logger: ReturnType<typeof createLogger>): void {
  try {
    const marker = readUpdateMarker(stateDir);
    if (marker === null) return;
    clearUpdateMarker(stateDir);
    if (marker.to === AGENT_VERSION) logger.info({ from: marker.from, to: marker.to }, "update committed: connected with the new version");
    else logger.warn({ from: marker.from, to: marker.to, running: AGENT_VERSION }, "the update was rolled back to the previous version");
  } catch (error) {
    logger.warn({ error: String(error) }, "cannot read or clear the update marker");
  }
}

// A lock held past the busy timeout, a full disk or an I/O error may pass: exit as a failure
// so the service manager starts the agent again. A journal from a newer agent, or a file that
// is not a journal, needs a person: exit as a configuration error, which is not retried.
function mayPass(error: unknown): boolean {
  if (error instanceof JournalError) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^SQLITE_(BUSY|LOCKED|FULL|IOERR|PROTOCOL)/.test(code);
}
