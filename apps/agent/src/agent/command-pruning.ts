// Forgets finished commands after a week, so the journal's command table does not grow for
// the life of the server. Safe because commands expire within minutes: a redelivery of a
// forgotten id is refused as expired by verifyCommand, never run again.
import type { Clock, TimerHandle } from "../clock.ts";
import type { Journal } from "../journal/journal-types.ts";
import type { Logger } from "../logger.ts";

const KEEP_MS = 7 * 24 * 3_600_000;
const EVERY_MS = 6 * 3_600_000;

export function startCommandPruning(deps: {
  journal: Pick<Journal, "pruneCommands">;
  clock: Clock;
  logger: Logger;
}): { stop(): void } {
  const { journal, clock, logger } = deps;
  let timer: TimerHandle | undefined;
  let stopped = false;
  const prune = () => {
    if (stopped) return;
    try {
      const removed = journal.pruneCommands(new Date(clock.now().getTime() - KEEP_MS));
      if (removed > 0) logger.info({ removed }, "forgot commands finished more than a week ago");
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
