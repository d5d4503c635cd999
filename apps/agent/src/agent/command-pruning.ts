// Forgets finished commands after a week, so the journal's command table does not grow for
// the life of the server. A command is forgotten only once it is also past its own expiry
// (some, like keys.update, stay valid for a month), so a redelivery of a forgotten id is
// refused as expired by verifyCommand, never run again; and one whose seq is at or below a
// forgotten command's is refused as stale_command (journal/command-forgetting.ts).
import { DEFAULT_CLOCK_SKEW_MS } from "@berth/protocol";
import type { Clock, ControlPlaneTime, TimerHandle } from "../clock.ts";
import type { Journal } from "../journal/journal-types.ts";
import type { Logger } from "../logger.ts";

const KEEP_MS = 7 * 24 * 3_600_000;
const EVERY_MS = 6 * 3_600_000;

export function startCommandPruning(deps: {
  journal: Pick<Journal, "pruneCommands">;
  clock: Clock;
  /** What expiries are compared with (the control plane's time, as verifyCommand does); default `clock`. */
  controlPlaneTime?: Pick<ControlPlaneTime, "now">;
  logger: Logger;
}): { stop(): void } {
  const { journal, clock, logger } = deps;
  let timer: TimerHandle | undefined;
  let stopped = false;
  const prune = () => {
    if (stopped) return;
    try {
      const now = (deps.controlPlaneTime ?? clock).now().getTime();
      // verifyCommand still takes a command up to the skew past its expiry.
      const removed = journal.pruneCommands({
        finishedBefore: new Date(now - KEEP_MS),
        expiredBefore: new Date(now - DEFAULT_CLOCK_SKEW_MS),
      });
      if (removed > 0) logger.info({ removed }, "forgot commands finished more than a week ago and expired");
    } catch (error) {
      logger.warn({ error: String(error) }, "cannot prune finished commands");
    }
    timer = clock.setTimeout(prune, EVERY_MS);
    // A housekeeping timer alone must not keep the process alive.
    timer.unref();
  };
  prune();
  return {
    stop() {
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
    },
  };
}
