// One agent's WebSocket as the gateway holds it, and what every part of the link does with
// it: read a frame (which frames are accepted depends on the handshake), send one, close.
import { randomBytes, randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import { AGENT_MESSAGE_TYPES, PROTOCOL_VERSIONS, encodeFrame, nackFor, parseFrame, type Frame, type MessageType, type Payload } from "@berth/protocol";

export interface Connection {
  id: string;
  socket: WebSocket;
  serverId: string | null;
  version: number;
  lastFrameAt: number;
  /** Frames are handled one after another so acks and results keep their order (frame-queue.ts). */
  queue: Promise<void>;
  /** Frames waiting on `queue`, the one being handled included. */
  queued: number;
  /** Frame id -> command id of unanswered commands, so a nack of a command frame is recorded as a rejection. */
  sentCommands: Map<string, string>;
  /**
   * Commands sent (or about to be sent) on this connection and not yet answered: each goes
   * out once per connection (the agent answers it there; a new connection gets every command
   * still unanswered).
   */
  delivered: Set<string>;
  /**
   * One set per outbox read in flight, collecting the commands answered meanwhile: the read
   * may have seen them still pending, and they must not go out again.
   */
  readsInFlight: Set<Set<string>>;
  acceptedAt: number;
  /** Closed by the sweep (handshake too slow, heartbeats missed): nothing more to check. */
  dropping: boolean;
  /** The challenge this connection must sign. */
  nonce: string;
  /** Set when a batch could not be stored: nothing after it may be acknowledged. */
  broken: boolean;
  /** `ready` was sent: commands may go out (before it the agent refuses them). */
  ready: boolean;
  /** Events this link sent that named another server's deployment or command (not applied). */
  refusedEvents: number;
  /** Log lines this link sent past its server's budget (acknowledged, not stored). */
  droppedLogLines: number;
}

/** A connection just accepted: no server yet, a fresh challenge. */
export function newConnection(socket: WebSocket): Connection {
  return {
    id: randomUUID(),
    socket,
    serverId: null,
    version: 1,
    lastFrameAt: Date.now(),
    queue: Promise.resolve(),
    queued: 0,
    sentCommands: new Map(),
    delivered: new Set(),
    readsInFlight: new Set(),
    acceptedAt: Date.now(),
    dropping: false,
    nonce: randomBytes(32).toString("base64"),
    broken: false,
    ready: false,
    refusedEvents: 0,
    droppedLogLines: 0,
  };
}

export function send<T extends MessageType>(conn: Connection, type: T, payload: Payload<T>, id?: string) {
  if (conn.socket.readyState !== conn.socket.OPEN) return;
  conn.socket.send(encodeFrame(type, payload, { v: conn.version, ...(id ? { id } : {}) }));
}

export function close(conn: Connection, code: number, reason: string) {
  try {
    conn.socket.close(code, reason);
  } catch {
    conn.socket.terminate();
  }
}

/**
 * The frame in `text`, or null after answering a malformed one with a nack. During the
 * handshake only hello (or a nack) is accepted, in any version this build speaks; after it,
 * any agent message in the version negotiated.
 */
export function readFrame(conn: Connection, text: string): Frame | null {
  const handshaking = conn.serverId === null;
  const parsed = parseFrame(text, {
    versions: handshaking ? PROTOCOL_VERSIONS : [conn.version],
    accept: handshaking ? ["hello", "nack"] : AGENT_MESSAGE_TYPES,
  });
  if (parsed.ok) return parsed.frame as Frame;
  if (parsed.error.type !== "nack") send(conn, "nack", nackFor(parsed.error));
  return null;
}
