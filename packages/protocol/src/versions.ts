// Protocol versions this build speaks, and the choice of one per connection.

/** Versions this build speaks. A breaking change to any frame adds a new one. */
export const PROTOCOL_VERSIONS: readonly number[] = [1];

/**
 * Version of the handshake frames (challenge, hello, ready, and a nack before ready).
 * Their shape is frozen so two builds can always talk long enough to find a common version.
 */
export const HANDSHAKE_VERSION = 1;

/** Highest version both sides speak, or null when they share none. */
export function negotiateVersion(ours: readonly number[], theirs: readonly number[]): number | null {
  let best: number | null = null;
  for (const v of ours) {
    if (theirs.includes(v) && (best === null || v > best)) best = v;
  }
  return best;
}
