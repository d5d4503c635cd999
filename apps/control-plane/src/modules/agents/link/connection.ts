// One agent's WebSocket as the gateway holds it, and what every part of the link does with
// it: read a frame (which frames are accepted depends on the handshake), send one, close.
import { randomBytes, randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import { AGENT_MESSAGE_TYPES, PROTOCOL_VERSIONS, encodeFrame, nackFor, parseFrame, type Frame, type MessageType, type Payload } from "@berth/protocol";

export interface Connection {
  id: string;
  socket: WebSocket;
  /** The address it came from (request.ip), which the pre-handshake limits count by. */
  address: string;
  /** Counted among its address's connections in their handshake (address-limits.ts) until then. */
  handshaking: boolean;
  /** A hello came: a connection gets one. */
  helloSeen: boolean;
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
  /**
   * Set when the link is being dropped: a batch could not be stored (nothing after it may be
   * acknowledged), or a limit was passed. Frames still queued are not handled.
   */
  broken: boolean;
  /** `ready` was sent: commands may go out (before it the agent refuses them). */
  ready: boolean;
  /** Being handed over (handover.ts): the socket stays paused, whatever the frame queue's back-pressure would do. */
  held: boolean;
  /** Events this link sent that named another server's deployment or command (not applied). */
  refusedEvents: number;
  /** Log lines this link sent past its server's budget (acknowledged, not stored). */
  droppedLogLines: number;
}

/** A connection just accepted: no server yet, a fresh challenge. */
export function newConnection(socket: WebSocket, address: string): Connection {
  return {
    id: randomUUID(),
    socket,
    address,
    handshaking: false,
    helloSeen: false,
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
    held: false,
    refusedEvents: 0,
    droppedLogLines: 0,
  };
}

export function send<T extends MessageType>(conn: Connection, type: T, payload: Payload<T>, id?: string) {
  if (conn.socket.readyState !== conn.socket.OPEN) return;
  conn.socket.send(encodeFrame(type, payload, { v: conn.version, ...(id ? { id } : {}) }));
}

export function close(conn: Connection, code: number, reason: string) {
  closeSocket(conn.socket, code, reason);
}

function closeSocket(socket: WebSocket, code: number, reason: string) {
  try {
    socket.close(code, reason);
  } catch {
    socket.terminate();
  }
}

/**
 * Closes a socket the control plane refuses to spend more on, and drops it a second later
 * whether or not the peer answered the close (ws would wait 30 s for that).
 */
export function refuse(socket: WebSocket, code: number, reason: string) {
  closeSocket(socket, code, reason);
  setTimeout(() => socket.terminate(), 1000).unref();
}

/**
 * The largest frame the socket reads: a larger one fails the link with 1009 as soon as its
 * header arrives, before its payload is buffered. ws takes the limit once per server (app.ts
 * passes MAX_AGENT_FRAME_BYTES) and has no public way to change it for one socket, so this
 * sets its receiver's field; admission.ts also checks each frame's size on arrival, should a
 * later ws move the field.
 */
export function setFrameLimit(conn: Connection, bytes: number) {
  const receiver = (conn.socket as unknown as { _receiver?: { _maxPayload?: unknown } })._receiver;
  if (receiver && typeof receiver._maxPayload === "number") receiver._maxPayload = bytes;
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
