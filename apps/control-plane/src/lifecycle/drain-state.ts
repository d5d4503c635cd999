// Whether this replica is draining (lifecycle/drain.ts): /readyz answers 503 from then on and
// the draining gauge of /metrics reads 1. Set once; a replica never stops draining.
export interface DrainState {
  readonly draining: boolean;
  /** Starts draining; false if it had started already (a second SIGTERM). */
  begin(): boolean;
}

export function createDrainState(): DrainState {
  let draining = false;
  return {
    get draining() {
      return draining;
    },
    begin() {
      if (draining) return false;
      draining = true;
      return true;
    },
  };
}
