// What one agent, or one address that has not proven to be one, may cost a replica: the
// log lines it stores per minute (budgets.ts), and the handshakes and hellos per address
// (address-limits.ts). Frame sizes are the protocol's (MAX_HANDSHAKE_FRAME_BYTES,
// MAX_AGENT_FRAME_BYTES) and back-pressure is frame-queue.ts's; neither is a setting.
export interface LinkLimits {
  /** `log` events stored per server per minute; more are acknowledged but dropped. */
  logLinesPerMinute: number;
  /** Bytes of log text (message and data) stored per server per minute. */
  logBytesPerMinute: number;
  /** Connections one address may hold on a replica before their handshake ends; more are closed at once. */
  handshakesPerAddress: number;
  /** Hellos one address may send to a replica per minute, counted before the hello's query. */
  hellosPerAddressPerMinute: number;
  /**
   * How long a replica holds a link whose event batch cannot be stored because PostgreSQL is
   * unreachable, retrying the write, before it drops the link (events.ts). Not a setting:
   * below the agent's 30 s ack timeout, and longer than a database restart or failover.
   */
  storeRetryMs: number;
}

export const DEFAULT_LINK_LIMITS: LinkLimits = {
  logLinesPerMinute: 60_000,
  logBytesPerMinute: 64 * 1024 * 1024,
  handshakesPerAddress: 20,
  hellosPerAddressPerMinute: 120,
  storeRetryMs: 20_000,
};

/** The defaults with `overrides` applied; a limit must be a positive integer. */
export function linkLimits(overrides: Partial<LinkLimits> = {}): LinkLimits {
  const limits = { ...DEFAULT_LINK_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`agent link limit ${name} must be a positive integer, got ${String(value)}`);
  }
  return limits;
}
