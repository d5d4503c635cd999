// Whether the links are alive. Heartbeats: an agent pings, the gateway answers at once.
// Dead links: one sweep over every connection rather than timers per connection (ten
// thousand agents are ten thousand links) drops handshakes that take too long, and links
// gone silent for two heartbeat intervals, which are dead whatever TCP thinks. last_seen_at:
// written for the agents heard from (pings, event batches) every few seconds, in rounds.
import { setTimeout as delay } from "node:timers/promises";
import { CLOSE_CODES, type Frame, type Payload } from "@berth/protocol";
import { repeat, type Repeating } from "../../../lib/repeat.ts";
import { close, send, type Connection } from "./connection.ts";
import type { LinkRepo } from "./link.repo.ts";

export const HANDSHAKE_TIMEOUT_MS = 10_000;
/** Servers per last_seen_at statement. */
const SEEN_CHUNK = 100;

export type Verdict = "handshake_timeout" | "heartbeat_timeout" | null;

/**
 * Whether a link must be dropped at `now`, and why: a handshake unfinished after
 * HANDSHAKE_TIMEOUT_MS, or no frame for over two heartbeat intervals (handshake or not).
 */
export function livenessVerdict(conn: Pick<Connection, "serverId" | "acceptedAt" | "lastFrameAt">, now: number, heartbeatMs: number): Verdict {
  if (conn.serverId === null && now - conn.acceptedAt > HANDSHAKE_TIMEOUT_MS) return "handshake_timeout";
  if (now - conn.lastFrameAt > 2 * heartbeatMs) return "heartbeat_timeout";
  return null;
}

/** The sweep runs at half the shorter of the two limits, and at most every 100 ms. */
export function sweepEveryMs(heartbeatMs: number): number {
  return Math.max(100, Math.floor(Math.min(heartbeatMs, HANDSHAKE_TIMEOUT_MS) / 2));
}

/** How often last_seen_at is written: every heartbeat, at most every 5 s. */
export function seenEveryMs(heartbeatMs: number): number {
  return Math.min(5_000, heartbeatMs);
}

/**
 * The pause between the statements of one last_seen_at round of `count` servers: the round
 * is spread over most of the interval, at most 250 ms apart. Ten thousand agents are a
 * hundred statements, and sent back to back they were a burst of WAL that the next durable
 * commits (a command being issued) had to flush, every round (bench:fleet's slowest
 * dispatches came in those bursts).
 */
export function seenSpacingMs(count: number, intervalMs: number): number {
  const chunks = Math.ceil(count / SEEN_CHUNK);
  return chunks > 1 ? Math.min(250, (intervalMs * 0.8) / chunks) : 0;
}

/** One sweep: closes the links livenessVerdict condemns (a silent one is also terminated a second later). */
function dropDead(all: Set<Connection>, heartbeatMs: number) {
  const now = Date.now();
  for (const conn of all) {
    if (conn.dropping) continue;
    const verdict = livenessVerdict(conn, now, heartbeatMs);
    if (verdict === "handshake_timeout") {
      conn.dropping = true;
      close(conn, CLOSE_CODES.handshake_timeout, "handshake timed out");
    } else if (verdict === "heartbeat_timeout") {
      conn.dropping = true;
      close(conn, CLOSE_CODES.heartbeat_timeout, "heartbeat timeout");
      setTimeout(() => conn.socket.terminate(), 1000).unref();
    }
  }
}

export interface LivenessOptions {
  /** Every connection, handshaking or not. */
  all: Set<Connection>;
  repo: Pick<LinkRepo, "touchLastSeen">;
  heartbeatMs: number;
  log: { warn(o: object, m: string): void };
}

export function createLiveness(opts: LivenessOptions) {
  const { heartbeatMs } = opts;
  const seen = new Set<string>();
  const seenIntervalMs = seenEveryMs(heartbeatMs);
  let seenRound: Promise<void> | null = null;
  let stopped = false;
  let sweep: Repeating | null = null;
  let seenLoop: Repeating | null = null;

  // In statements of a hundred rows that skip rows locked right now (a command being
  // issued): liveness never makes anything wait, and a skipped row is written next round.
  async function writeSeen(ids: string[]) {
    const spacingMs = seenSpacingMs(ids.length, seenIntervalMs);
    for (let i = 0; i < ids.length; i += SEEN_CHUNK) {
      if (i > 0 && spacingMs > 0) await delay(spacingMs, undefined, { ref: false });
      if (stopped) return;
      const chunk = ids.slice(i, i + SEEN_CHUNK);
      const written = await opts.repo.touchLastSeen(chunk);
      if (written.length < chunk.length) {
        const done = new Set(written);
        for (const id of chunk) if (!done.has(id)) seen.add(id);
      }
    }
  }

  async function seenRoundNow() {
    if (seen.size === 0) return;
    const ids = [...seen];
    seen.clear();
    seenRound = writeSeen(ids);
    try {
      await seenRound;
    } finally {
      seenRound = null;
    }
  }

  return {
    /** The agent was heard from: its last_seen_at is written next round. */
    seen(serverId: string) {
      seen.add(serverId);
    },

    answerPing(conn: Connection, frame: Frame) {
      seen.add(conn.serverId!);
      send(conn, "pong", { ts: (frame.payload as Payload<"ping">).ts });
    },

    /** Starts the sweep and the last_seen_at rounds (each run schedules the next when it ends). */
    start() {
      const warn = (msg: string) => (err: unknown) => opts.log.warn({ err }, msg);
      sweep = repeat(() => dropDead(opts.all, heartbeatMs), { everyMs: sweepEveryMs(heartbeatMs), onError: warn("liveness sweep failed") });
      // A round is one run: the next starts an interval after it ends (a spread round of ten
      // thousand agents takes most of an interval, so such rounds start about two apart).
      seenLoop = repeat(seenRoundNow, { everyMs: seenIntervalMs, onError: warn("last_seen update failed") });
    },

    /** Stops both; a last_seen_at round in flight ends after its current statement. */
    async stop() {
      seenLoop?.stop();
      stopped = true;
      await seenRound?.catch(() => {});
      sweep?.stop();
    },
  };
}
export type Liveness = ReturnType<typeof createLiveness>;
