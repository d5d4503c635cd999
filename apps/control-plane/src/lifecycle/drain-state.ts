// Whether this replica is draining (lifecycle/drain.ts): /readyz answers 503 from then on and
// the draining gauge of /metrics reads 1. Set once; a replica never stops draining.
import { JOB_STOP_GRACE_MS } from "../db/jobs.ts";

/** What a drain keeps before its deadline, after the jobs have stopped: the rest of the close and the database's. */
export const DRAIN_CLOSE_RESERVE_MS = 2_000;

export interface DrainState {
  readonly draining: boolean;
  /** Starts draining, to be done by `deadlineAt` (epoch ms); false if it had started already (a second SIGTERM). */
  begin(deadlineAt?: number): boolean;
  /**
   * How long running background jobs may go on when the app closes: while draining, until
   * DRAIN_CLOSE_RESERVE_MS before the drain's deadline (at least 1 s), so that jobs still
   * running are failed and retried elsewhere before the deadline cuts the process; otherwise
   * JOB_STOP_GRACE_MS.
   */
  jobsGraceMs(now?: number): number;
}

export function createDrainState(): DrainState {
  let draining = false;
  let deadline: number | null = null;
  return {
    get draining() {
      return draining;
    },
    begin(deadlineAt) {
      if (draining) return false;
      draining = true;
      deadline = deadlineAt ?? null;
      return true;
    },
    jobsGraceMs(now = Date.now()) {
      if (deadline === null) return JOB_STOP_GRACE_MS;
      return Math.max(1_000, deadline - now - DRAIN_CLOSE_RESERVE_MS);
    },
  };
}
