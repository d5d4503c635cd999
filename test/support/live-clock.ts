// A control plane's clock in tests and tools: it follows real time unless the caller moves
// it forward (past a rate-limit window, a session's lifetime).
import { manualClock, type Clock } from "@berth/control-plane";

export type LiveClock = Clock & { advance(ms: number): void };

export function liveClock(): LiveClock {
  const clock = manualClock(new Date());
  const realStart = Date.now();
  const base = clock.now().getTime();
  let offset = 0;
  return Object.assign(clock, {
    now: () => new Date(base + (Date.now() - realStart) + offset),
    advance: (ms: number) => {
      offset += ms;
    },
  });
}
