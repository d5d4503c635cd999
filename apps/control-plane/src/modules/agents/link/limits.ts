// What one agent may cost a replica: the log lines it stores per minute (budgets.ts).
// Back-pressure is frame-queue.ts's and not a setting.
export interface LinkLimits {
  /** `log` events stored per server per minute; more are acknowledged but dropped. */
  logLinesPerMinute: number;
  /** Bytes of log text (message and data) stored per server per minute. */
  logBytesPerMinute: number;
}

export const DEFAULT_LINK_LIMITS: LinkLimits = {
  logLinesPerMinute: 60_000,
  logBytesPerMinute: 64 * 1024 * 1024,
};

/** The defaults with `overrides` applied; a limit must be a positive integer. */
export function linkLimits(overrides: Partial<LinkLimits> = {}): LinkLimits {
  const limits = { ...DEFAULT_LINK_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`agent link limit ${name} must be a positive integer, got ${String(value)}`);
  }
  return limits;
}
