// One WebSocket connection to the control plane, from dial to close: the challenge/hello/
// ready handshake, then heartbeats, commands down and events up. Everything here lives and
// dies with the connection; the link (link.ts) decides when to dial again.
import type WebSocket from "ws";
import {
  CLOSE_CODES,
  CONTROL_PLANE_MESSAGE_TYPES,
  DEFAULT_CLOCK_SKEW_MS,
  HANDSHAKE_VERSION,
  PROTOCOL_VERSIONS,
  encodeFrame,
  nackFor,
  parseFrame,
  signChallenge,
  type Challenge,
  type KeyObject,
  type MessageType,
  type Payload,
  type Ready,
} from "@berth/protocol";
import { MAX_CLOCK_CORRECTION_MS, type Clock, type ControlPlaneTime } from "../clock.ts";
import type { EventOutbox } from "../events/event-outbox.ts";
import type { CommandRunner } from "../executor/runner/command-runner.ts";
import type { Journal } from "../journal/journal-types.ts";
import type { Logger } from "../logger.ts";
import { createEventSender, type EventSender, type EventSenderOptions } from "./event-sender.ts";
import { startHeartbeat, type Heartbeat } from "./heartbeat.ts";

export type WebSocketConstructor = typeof WebSocket;

const HANDSHAKE_TYPES = ["challenge", "ready", "nack"] as const satisfies readonly MessageType[];
const SESSION_TYPES = CONTROL_PLANE_MESSAGE_TYPES.filter((type) => type !== "challenge" && type !== "ready");
// A frame this large is a bug or an attack; the biggest legitimate one is a command.
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
// After a close frame, how long to wait for the peer's before dropping the socket.
const CLOSE_GRACE_MS = 2_000;

export interface SessionDeps {
  /** Full ws:// or wss:// URL of the connect endpoint. */
  url: string;
  WebSocket: WebSocketConstructor;
  serverId: string;
  privateKey: KeyObject;
  agentVersion: string;
  capabilities: readonly string[];
  journal: Pick<Journal, "lastCommandSeq" | "nextEventSeq" | "skipEventSeqTo" | "ack" | "pending" | "lastAckedSeq">;
  outbox: Pick<EventOutbox, "subscribe">;
  commands: Pick<CommandRunner, "receive" | "cancel">;
  clock: Clock;
  /** Set from each handshake's challenge. */
  controlPlaneTime: Pick<ControlPlaneTime, "observe">;
  logger: Logger;
  /** From opening the socket to `ready`. */
  handshakeTimeoutMs: number;
  sender?: EventSenderOptions;
  onHandshaking?: () => void;
  onReady?: (ready: Ready) => void;
  onPong?: (rttMs: number) => void;
}

export interface SessionEnd {
  code: number;
  reason: string;
  /** When `ready` arrived (ms since epoch), or null if the handshake never finished. */
  readyAt: number | null;
  endedAt: number;
  /** The socket error, if one ended the session. */
  error: string | null;
}

export interface Session {
  readonly ended: Promise<SessionEnd>;
  isReady(): boolean;
  /** Resolves true once every journalled event is acknowledged; false after `ms` or if not ready. */
  flush(ms: number): Promise<boolean>;
  close(code: number, reason: string): void;
}

export function openSession(deps: SessionDeps): Session {
  const { clock, logger, journal } = deps;
  let phase: "challenge" | "hello_sent" | "ready" | "closed" = "challenge";
  let version = HANDSHAKE_VERSION;
  let readyAt: number | null = null;
  let lastError: string | null = null;
  let heartbeat: Heartbeat | null = null;
  let sender: EventSender | null = null;
  let unsubscribe: (() => void) | null = null;
  let resolveEnded!: (end: SessionEnd) => void;
  const ended = new Promise<SessionEnd>((resolve) => {
    resolveEnded = resolve;
  });

  const ws = new deps.WebSocket(deps.url, { handshakeTimeout: deps.handshakeTimeoutMs, maxPayload: MAX_FRAME_BYTES });
  const handshakeTimer = clock.setTimeout(
    () => close(CLOSE_CODES.handshake_timeout, "handshake did not finish in time"),
    deps.handshakeTimeoutMs,
  );

  function send<T extends MessageType>(type: T, payload: Payload<T>): void {
    if (ws.readyState !== ws.OPEN) return;
    let text: string;
    try {
      text = encodeFrame(type, payload, { v: version });
    } catch (error) {
      // A frame that breaks its own schema is a bug here; the peer would only nack it.
      logger.error({ type, error: String(error) }, "refusing to send an invalid frame");
      return;
    }
    ws.send(text);
  }

  function close(code: number, reason: string): void {
    if (ws.readyState === ws.CONNECTING) {
      lastError ??= reason;
      ws.terminate();
      return;
    }
    if (ws.readyState !== ws.OPEN) return;
    ws.close(code, reason);
    // A dead peer never answers the close frame; do not wait ws's 30 s for it.
    const grace = clock.setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
    ws.once("close", () => clock.clearTimeout(grace));
  }

  function onChallenge(challenge: Challenge): void {
    phase = "hello_sent";
    // Commands are judged by the control plane's time from now on (clock.ts ControlPlaneTime).
    const skewMs = deps.controlPlaneTime.observe(new Date(challenge.server_time));
    if (Math.abs(skewMs) > MAX_CLOCK_CORRECTION_MS) {
      logger.error(
        { skew_ms: skewMs },
        "this server's clock is more than a day off the control plane's; commands will be rejected as expired until it is set right (is NTP running?)",
      );
    } else if (Math.abs(skewMs) > DEFAULT_CLOCK_SKEW_MS) {
      logger.warn(
        { skew_ms: skewMs },
        "this server's clock differs from the control plane's; commands are judged, and events dated, by the control plane's time (is NTP running?)",
      );
    }
    send("hello", {
      server_id: deps.serverId,
      agent_version: deps.agentVersion,
      protocol_versions: [...PROTOCOL_VERSIONS],
      capabilities: [...deps.capabilities],
      last_command_seq: journal.lastCommandSeq(),
      next_event_seq: journal.nextEventSeq(),
      challenge_signature: signChallenge(challenge.nonce, deps.serverId, deps.privateKey),
    });
  }

  function onReady(ready: Ready): void {
    if (!PROTOCOL_VERSIONS.includes(ready.protocol_version)) {
      logger.error(
        { protocol_version: ready.protocol_version },
        "control plane chose a protocol version this agent does not speak",
      );
      close(CLOSE_CODES.no_common_version, `protocol version ${ready.protocol_version} not supported`);
      return;
    }
    clock.clearTimeout(handshakeTimer);
    phase = "ready";
    version = ready.protocol_version;
    readyAt = clock.now().getTime();
    reconcileSeqs(ready.resend_from);

    heartbeat = startHeartbeat({
      clock,
      intervalMs: ready.heartbeat_ms,
      sendPing: () => send("ping", { ts: clock.now().toISOString() }),
      onDead: (silentForMs) => {
        logger.warn({ silent_for_ms: silentForMs }, "no frame from the control plane for two heartbeats; reconnecting");
        lastError = `no frame for ${silentForMs} ms`;
        close(CLOSE_CODES.heartbeat_timeout, "heartbeat timeout");
      },
    });
    const eventSender = createEventSender({
      journal,
      send: (events) => send("events", { events }),
      clock,
      logger,
      ...(deps.sender === undefined ? {} : { options: deps.sender }),
    });
    sender = eventSender;
    unsubscribe = deps.outbox.subscribe(() => eventSender.wake());
    eventSender.start(ready.resend_from);
    deps.onReady?.(ready);
  }

  // resend_from is the control plane's "last stored + 1". Anything below it is stored, even
  // if its ack was lost with the old link; a value beyond our counter means our journal
  // rolled back (power cut) and those seqs must never be handed out again.
  function reconcileSeqs(resendFrom: number): void {
    if (resendFrom > journal.nextEventSeq()) {
      logger.warn(
        { resend_from: resendFrom, next_event_seq: journal.nextEventSeq() },
        "control plane holds seqs beyond the journal; skipping ahead",
      );
      journal.skipEventSeqTo(resendFrom);
    }
    if (resendFrom - 1 < journal.lastAckedSeq()) {
      logger.warn(
        { resend_from: resendFrom, last_acked_seq: journal.lastAckedSeq() },
        "control plane asks for events it acknowledged before; they are gone, sending what remains",
      );
    }
    journal.ack(resendFrom - 1);
  }

  function onMessage(text: string): void {
    heartbeat?.frameReceived();
    try {
      dispatch(text);
    } catch (error) {
      // A journal failure (disk full, say) while handling a frame: leave it unanswered, and
      // the control plane's outbox and resend_from bring it back on the next connection.
      logger.error({ error: String(error) }, "failed to handle a frame from the control plane");
    }
  }

  function dispatch(text: string): void {
    const parsed =
      phase === "ready"
        ? parseFrame(text, { versions: [version], accept: SESSION_TYPES })
        : parseFrame(text, { versions: [HANDSHAKE_VERSION], accept: HANDSHAKE_TYPES });
    if (!parsed.ok) {
      logger.warn({ code: parsed.error.code, ref_id: parsed.error.ref_id }, `refused a frame: ${parsed.error.message}`);
      // Never a nack for a nack, so two peers cannot answer each other forever.
      if (parsed.error.type !== "nack") send("nack", nackFor(parsed.error));
      return;
    }
    const frame = parsed.frame;
    switch (frame.type) {
      case "challenge":
        if (phase !== "challenge") return unexpected(frame.id, "challenge");
        return onChallenge(frame.payload);
      case "ready":
        if (phase !== "hello_sent") return unexpected(frame.id, "ready");
        return onReady(frame.payload);
      case "nack":
        logger.warn({ ...frame.payload }, "control plane refused a frame");
        return;
      case "pong": {
        const rtt = clock.now().getTime() - Date.parse(frame.payload.ts);
        if (Number.isFinite(rtt) && rtt >= 0) deps.onPong?.(rtt);
        return;
      }
      case "command": {
        const answer = deps.commands.receive(frame.payload);
        if (answer !== null) send(answer.type, answer.payload);
        return;
      }
      case "command.cancel":
        if (!deps.commands.cancel(frame.payload.command_id)) {
          logger.info({ command_id: frame.payload.command_id }, "cancel for a command not running here; ignored");
        }
        return;
      case "events.ack":
        sender?.acked(frame.payload.up_to_seq);
        return;
      default:
        return unexpected(frame.id, frame.type);
    }
  }

  function unexpected(refId: string, type: string): void {
    logger.warn({ type }, "frame out of order");
    send("nack", { ref_id: refId, code: "unexpected_type", message: `frame type "${type}" is not expected now` });
  }

  ws.on("open", () => deps.onHandshaking?.());
  ws.on("message", (data, isBinary) => {
    if (isBinary) {
      send("nack", { ref_id: null, code: "invalid_json", message: "binary frames are not part of the protocol" });
      return;
    }
    onMessage(rawText(data));
  });
  ws.on("error", (error) => {
    lastError = error.message;
    logger.debug({ error: error.message }, "socket error");
  });
  ws.on("close", (code, reason) => {
    phase = "closed";
    clock.clearTimeout(handshakeTimer);
    heartbeat?.stop();
    sender?.stop();
    unsubscribe?.();
    resolveEnded({ code, reason: reason.toString(), readyAt, endedAt: clock.now().getTime(), error: lastError });
  });

  return {
    ended,
    isReady: () => phase === "ready",
    flush: (ms) => (phase === "ready" && sender !== null ? sender.settled(ms) : Promise.resolve(false)),
    close,
  };
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
