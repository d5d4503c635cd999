// The agent's one outbound link: dial, run a session until it ends, wait a jittered backoff,
// dial again, until stopped. The backoff returns to its first step only after a connection
// that reached `ready` stayed up for a while (10 s by default): a control plane that accepts
// and then drops at once (crash loop, misrouted balancer) must not be hammered at the
// shortest delay forever, which resetting on `ready` alone would do.
//
// A replica that drains (close code 1012, service_restart) is not a failure: the agent comes
// back after a uniform random delay in [0, DRAIN_RECONNECT_SPREAD_MS), so the agents of a
// draining replica spread over the survivors, and its backoff stays where it was.
import { CLOSE_CODES } from "@berth/protocol";
import { sleep } from "../clock.ts";
import type { LinkStatus } from "../state/link-status-file.ts";
import { createBackoff, type BackoffOptions } from "./backoff.ts";
import { openSession, type Session, type SessionDeps, type SessionEnd } from "./session.ts";

/** Reconnects after a drain (close 1012) are spread uniformly over this long. */
export const DRAIN_RECONNECT_SPREAD_MS = 5_000;

/** What a session needs (session.ts), with the link's own timing and status in place of the session's callbacks. */
export interface LinkDeps extends Omit<SessionDeps, "handshakeTimeoutMs" | "onHandshaking" | "onReady" | "onPong"> {
  backoff?: BackoffOptions;
  /** A connection up this long after `ready` resets the backoff. Default 10 s. */
  stableAfterMs?: number;
  /** From opening the socket to `ready`. Default 15 s. */
  handshakeTimeoutMs?: number;
  onStatus?: (status: LinkStatus) => void;
  /** After a drain close (1012), the delay is drawn from [0, this). Default DRAIN_RECONNECT_SPREAD_MS. */
  drainSpreadMs?: number;
}

/** Why the link stopped for good: asked to, or another agent took this identity over. */
export type LinkEnd = "stopped" | "replaced";

export interface Link {
  start(): void;
  /** Flushes unacknowledged events for up to `flushMs` if connected, then closes normally. */
  stop(options?: { flushMs?: number }): Promise<void>;
  status(): LinkStatus;
  /** Resolves when the loop ends, by stop() or because the connection was replaced. */
  readonly ended: Promise<LinkEnd>;
}

export function createLink(deps: LinkDeps): Link {
  const { clock, logger } = deps;
  const backoff = createBackoff(deps.backoff);
  const { backoff: _backoff, stableAfterMs: _stableAfterMs, onStatus: _onStatus, drainSpreadMs: _drainSpreadMs, ...sessionDeps } = deps;
  const drainSpreadMs = deps.drainSpreadMs ?? DRAIN_RECONNECT_SPREAD_MS;
  const random = deps.backoff?.random ?? Math.random;
  const stableAfterMs = deps.stableAfterMs ?? 10_000;
  const stopping = new AbortController();
  let session: Session | null = null;
  let loop: Promise<LinkEnd> | null = null;
  let resolveEnded!: (end: LinkEnd) => void;
  const ended = new Promise<LinkEnd>((resolve) => {
    resolveEnded = resolve;
  });
  let status: LinkStatus = {
    state: "stopped",
    since: clock.now().toISOString(),
    connected_at: null,
    last_heartbeat_at: null,
    rtt_ms: null,
    last_error: null,
    next_attempt_at: null,
  };

  function update(change: Partial<LinkStatus>): void {
    const now = clock.now().toISOString();
    const since = change.state !== undefined && change.state !== status.state ? now : status.since;
    status = { ...status, ...change, since };
    deps.onStatus?.(status);
  }

  async function run(): Promise<LinkEnd> {
    while (!stopping.signal.aborted) {
      update({ state: "connecting", next_attempt_at: null });
      const current = openSession({
        ...sessionDeps,
        clock,
        logger,
        handshakeTimeoutMs: deps.handshakeTimeoutMs ?? 15_000,
        onHandshaking: () => update({ state: "handshaking" }),
        onReady: (ready) => {
          logger.info({ url: deps.url, heartbeat_ms: ready.heartbeat_ms, resend_from: ready.resend_from }, "link ready");
          update({ state: "ready", connected_at: clock.now().toISOString(), last_error: null });
        },
        onPong: (rtt) => update({ last_heartbeat_at: clock.now().toISOString(), rtt_ms: rtt }),
      });
      session = current;
      const end = await current.ended;
      session = null;
      update({ connected_at: null, last_error: describe(end) });
      if (stopping.signal.aborted) break;

      if (end.code === CLOSE_CODES.replaced) {
        logger.error({}, "another agent connected with this server's identity; this one stops (is the agent running twice?)");
        return "replaced";
      }
      const delay = nextDelay(end);
      logger.info({ code: end.code, reason: end.reason || end.error, retry_in_ms: delay }, "link down; reconnecting");
      update({ state: "waiting", next_attempt_at: new Date(clock.now().getTime() + delay).toISOString() });
      await sleep(clock, delay, stopping.signal);
    }
    return "stopped";
  }

  /** How long to wait before dialling again after `end`. */
  function nextDelay(end: SessionEnd): number {
    if (end.code === CLOSE_CODES.service_restart) {
      if (wasStable(end)) backoff.reset();
      return Math.floor(random() * drainSpreadMs);
    }
    adjustBackoff(end);
    return backoff.next();
  }

  function wasStable(end: SessionEnd): boolean {
    return end.readyAt !== null && end.endedAt - end.readyAt >= stableAfterMs;
  }

  function adjustBackoff(end: SessionEnd): void {
    if (wasStable(end)) backoff.reset();
    if (end.code === CLOSE_CODES.auth_failed) {
      logger.error({}, "the control plane refused this agent's identity (auth_failed): re-enrol the server if it was removed");
      backoff.toMax();
    } else if (end.code === CLOSE_CODES.no_common_version) {
      logger.error({}, "the control plane speaks no protocol version this agent does: upgrade the agent");
      backoff.toMax();
    }
  }

  return {
    start() {
      if (loop !== null) return;
      loop = run();
      void loop.then((end) => {
        update({ state: "stopped", next_attempt_at: null });
        resolveEnded(end);
      });
    },
    async stop(options = {}) {
      stopping.abort();
      const current = session;
      if (current !== null) {
        if (current.isReady()) {
          const flushed = await current.flush(options.flushMs ?? 5_000);
          if (!flushed) {
            logger.warn({}, "some events are not acknowledged yet; they stay journalled and go after the next start");
          }
        }
        current.close(CLOSE_CODES.normal, "agent shutting down");
      }
      if (loop !== null) await ended;
    },
    status: () => status,
    ended,
  };
}

function describe(end: SessionEnd): string {
  if (end.error !== null && end.code === 1006) return end.error;
  return `closed with ${end.code}${end.reason === "" ? "" : ` (${end.reason})`}`;
}
