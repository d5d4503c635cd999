// WebSocket close codes of the link (4000-4999 is the application range), so the side
// that is cut off knows whether reconnecting can help.

export const CLOSE_CODES = {
  /** Clean close, e.g. the agent is shutting down. Reconnect normally. */
  normal: 1000,
  /** The control plane is shutting down without a drain (or could not store events). Reconnect with backoff. */
  going_away: 1001,
  /**
   * A frame was larger than the peer accepts (RFC 6455 "message too big"): before the
   * handshake ends, more than MAX_HANDSHAKE_FRAME_BYTES. Reconnect with backoff.
   */
  too_large: 1009,
  /**
   * "Service Restart": this control-plane replica is draining (SIGTERM) and hands its agents
   * over to the others. Not a failure: reconnect after a short uniform random delay (the
   * agent's DRAIN_RECONNECT_SPREAD_MS) without growing the backoff.
   */
  service_restart: 1012,
  /** Challenge signature did not verify or the server is not enrolled. Retrying is pointless until re-enrolment; back off to the maximum. */
  auth_failed: 4001,
  /** No protocol version in common. The agent needs an upgrade; back off to the maximum. */
  no_common_version: 4002,
  /** Two heartbeat intervals passed without a frame. Reconnect with backoff. */
  heartbeat_timeout: 4003,
  /** A newer connection from the same server took over. Do not reconnect this one. */
  replaced: 4004,
  /** The handshake did not finish in time. Reconnect with backoff. */
  handshake_timeout: 4005,
  /** The peer kept sending frames that could not be parsed. Reconnect with backoff. */
  protocol_error: 4006,
  /**
   * Too many connections still in their handshake, or too many hellos in the last minute,
   * from this address. Reconnect with backoff.
   */
  rate_limited: 4007,
} as const;

export type CloseReason = keyof typeof CLOSE_CODES;
