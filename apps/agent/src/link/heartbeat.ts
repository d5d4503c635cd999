// Liveness of one connection: a ping every interval, and the link declared dead when two
// intervals pass without any frame from the control plane (a pong, an ack, a command...).
// A fresh heartbeat is made for every connection, so no state leaks from a dead one.
import type { Clock, TimerHandle } from "../clock.ts";

export interface Heartbeat {
  /** Any frame proves the peer alive; call on every one received. */
  frameReceived(): void;
  stop(): void;
}

export function startHeartbeat(deps: {
  clock: Clock;
  intervalMs: number;
  sendPing: () => void;
  onDead: (silentForMs: number) => void;
}): Heartbeat {
  const { clock, intervalMs } = deps;
  const deadAfterMs = 2 * intervalMs;
  let lastFrameAt = clock.now().getTime();
  let stopped = false;
  let pingTimer: TimerHandle | undefined;
  let watchdog: TimerHandle | undefined;

  const ping = () => {
    if (stopped) return;
    deps.sendPing();
    pingTimer = clock.setTimeout(ping, intervalMs);
  };

  // Re-armed only when it fires, not on every frame: a busy link receives many frames and
  // moving a timer for each would cost more than the check.
  const watch = (delayMs: number) => {
    watchdog = clock.setTimeout(() => {
      if (stopped) return;
      const silentFor = clock.now().getTime() - lastFrameAt;
      if (silentFor >= deadAfterMs) {
        stopped = true;
        if (pingTimer !== undefined) clock.clearTimeout(pingTimer);
        deps.onDead(silentFor);
      } else {
        watch(deadAfterMs - silentFor);
      }
    }, delayMs);
  };

  pingTimer = clock.setTimeout(ping, intervalMs);
  watch(deadAfterMs);

  return {
    frameReceived() {
      lastFrameAt = clock.now().getTime();
    },
    stop() {
      stopped = true;
      if (pingTimer !== undefined) clock.clearTimeout(pingTimer);
      if (watchdog !== undefined) clock.clearTimeout(watchdog);
    },
  };
}
