// The gate a link passes before its handshake ends, when nothing says it is an agent yet:
// per address only so many connections in their handshake and so many hellos a minute
// (address-limits.ts), one hello per connection, and frames of MAX_HANDSHAKE_FRAME_BYTES at
// most. Once `ready` goes out the link reads frames of MAX_AGENT_FRAME_BYTES and no longer
// counts against its address. What is refused is closed with a policy close code
// (rate_limited, too_large, protocol_error) and costs no database query.
import type { WebSocket } from "ws";
import { CLOSE_CODES, MAX_AGENT_FRAME_BYTES, MAX_HANDSHAKE_FRAME_BYTES } from "@berth/protocol";
import { createAddressLimits } from "./address-limits.ts";
import { close, refuse, setFrameLimit, type Connection } from "./connection.ts";
import type { LinkLimits } from "./limits.ts";

export function createAdmission(opts: { limits: LinkLimits; now(): number }) {
  const addresses = createAddressLimits({ ...opts.limits, now: opts.now });
  const refused = { connections: 0, hellos: 0 };

  /** The handshake is over (ready, or the socket closed): the address may open another; idempotent. */
  function ended(conn: Connection) {
    if (!conn.handshaking) return;
    conn.handshaking = false;
    addresses.release(conn.address);
  }

  /** Marks the link as dropped: frames still queued on it are not handled. */
  function drop(conn: Connection, code: number, reason: string) {
    conn.broken = true;
    refuse(conn.socket, code, reason);
  }

  return {
    /** A socket from `address`: false, and the socket refused, when the address has its fill of handshakes. */
    admit(socket: WebSocket, address: string): boolean {
      if (addresses.admit(address)) return true;
      refused.connections++;
      refuse(socket, CLOSE_CODES.rate_limited, "too many connections in their handshake from this address");
      return false;
    },

    /** The admitted socket's connection: counted for its address, reading small frames only. */
    begin(conn: Connection) {
      conn.handshaking = true;
      setFrameLimit(conn, MAX_HANDSHAKE_FRAME_BYTES);
    },

    /**
     * Whether a frame of `bytes` may be handled; false (and the link dropped) for one too large
     * before the handshake ended. ws already refuses it by its header (setFrameLimit): this
     * holds should a later ws stop honouring that.
     */
    frameFits(conn: Connection, bytes: number): boolean {
      if (conn.ready || bytes <= MAX_HANDSHAKE_FRAME_BYTES) return true;
      drop(conn, CLOSE_CODES.too_large, "frame too large before the handshake");
      return false;
    },

    /** Whether a hello may be looked up: one per connection, and per address so many a minute. */
    hello(conn: Connection): boolean {
      if (conn.helloSeen) {
        conn.broken = true;
        close(conn, CLOSE_CODES.protocol_error, "a second hello on one connection");
        return false;
      }
      conn.helloSeen = true;
      if (addresses.takeHello(conn.address)) return true;
      refused.hellos++;
      drop(conn, CLOSE_CODES.rate_limited, "too many hellos from this address");
      return false;
    },

    /** `ready` is about to go out: the link reads agent-sized frames and leaves its address's count. */
    opened(conn: Connection) {
      ended(conn);
      setFrameLimit(conn, MAX_AGENT_FRAME_BYTES);
    },

    ended,

    stats: () => ({ handshaking: addresses.handshaking(), connectionsRefused: refused.connections, hellosRefused: refused.hellos }),
  };
}
export type Admission = ReturnType<typeof createAdmission>;
