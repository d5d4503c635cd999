// A simulated agent for the drill: enrols over HTTP and speaks the link over a real WebSocket
// with the protocol package's helpers (like test/support/sim-agent.ts), but keeps going like
// the real agent does: it reconnects with jittered backoff after any close, journals its
// events until the control plane acknowledges them and resends from `resend_from`, answers a
// repeated command id with its recorded result instead of running it again, and pings every
// heartbeat. It counts what it ran (per command id) and the numbered log lines it made, so
// the drill can compare them with what the control plane stored.
import WebSocket from "ws";
import {
  AGENT_CONNECT_PATH,
  CONTROL_PLANE_MESSAGE_TYPES,
  MAX_EVENTS_PER_BATCH,
  PROTOCOL_VERSIONS,
  encodeFrame,
  generateKeyPair,
  importPublicKey,
  parseFrame,
  signChallenge,
  verifyCommand,
  type EnrollResponse,
  type Event,
  type EventInput,
  type KeyPair,
  type MessageType,
  type Payload,
  type SignedCommand,
} from "@berth/protocol";
import { enrollSimulatedAgent } from "../support/sim-agent.ts";

export interface SimAgentOptions {
  /** Where it enrols and connects (HAProxy). */
  url: string;
  /** Where it connects when not `url` (a probe holds one replica directly). */
  connectUrl?: string;
  token: string;
  /** A log line every this many ms while connected or not (0: none). */
  logEveryMs: number;
  /** The agent's clock offset in ms (clock skew). */
  clockOffsetMs?: number;
  /** Where unacknowledged events wait (in memory unless given: see agent-journal.ts). */
  journal?: SimJournal;
}

/** Events not yet acknowledged, numbered in order. */
export interface SimJournal {
  append(event: EventInput, ts: string): Event;
  /** Every pending event with seq >= fromSeq, in order. */
  from(fromSeq: number): Event[];
  ack(upToSeq: number): void;
  nextSeq(): number;
  count(): number;
}

export function memoryJournal(): SimJournal {
  let events: Event[] = [];
  let next = 1;
  return {
    append(event, ts) {
      const e = { ...event, seq: next++, ts } as Event;
      events.push(e);
      return e;
    },
    from: (fromSeq) => events.filter((e) => e.seq >= fromSeq),
    ack(upTo) {
      events = events.filter((e) => e.seq > upTo);
    },
    nextSeq: () => next,
    count: () => events.length,
  };
}

export class DrillSimAgent {
  readonly keys: KeyPair = generateKeyPair();
  identity!: EnrollResponse;
  /** Executions per command id (more than 1 = ran twice). */
  readonly executions = new Map<string, number>();
  /** Deliveries of a command id already run (at-least-once delivery; answered from the journal). */
  redeliveries = 0;
  readonly rejected: { command_id: string; code: string }[] = [];
  /** Log lines made (numbered 1..logsMade); lineTimes[n - 1] is when line n was made. */
  logsMade = 0;
  readonly lineTimes: number[] = [];
  readonly lineLevels: ("info" | "debug")[] = [];
  connects = 0;
  readonly closes: number[] = [];
  connected = false;
  private socket: WebSocket | null = null;
  private lastCommandSeq = 0;
  private readonly journal: SimJournal;
  private readonly results = new Map<string, Event>();
  private stopped = false;
  private attempt = 0;
  private pingTimer: NodeJS.Timeout | null = null;
  private logTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(readonly opts: SimAgentOptions) {
    this.journal = opts.journal ?? memoryJournal();
  }

  get serverId(): string {
    return this.identity.server_id;
  }

  /** Events made and not yet acknowledged. */
  get pending(): number {
    return this.journal.count();
  }

  private now(): Date {
    return new Date(Date.now() + (this.opts.clockOffsetMs ?? 0));
  }

  async enroll(): Promise<void> {
    this.identity = await enrollSimulatedAgent(this.opts.url, this.opts.token, this.keys, {
      agentVersion: "drill-sim-1.0.0",
      host: { hostname: "drill-sim", os: "Debian 12", arch: "x64", cpu_cores: 2, ram_mb: 4096, disk_gb: 40, docker_version: "28.2.2" },
    });
  }

  start(): void {
    if (this.opts.logEveryMs > 0) {
      // Spread the fleet's lines over the interval.
      this.logTimer = setInterval(() => this.log(), this.opts.logEveryMs * (0.8 + Math.random() * 0.4));
    }
    this.connect();
  }

  /** Makes no more log lines (the drill reads the ledger once the last ones had time to arrive). */
  quiet(): void {
    if (this.logTimer) clearInterval(this.logTimer);
    this.logTimer = null;
  }

  stop(): void {
    this.stopped = true;
    for (const t of [this.pingTimer, this.logTimer, this.reconnectTimer]) if (t) clearInterval(t);
    this.socket?.close(1000);
  }

  /** Drops the link (as a crash of the network would, without a close frame) and keeps it down for `ms`. */
  cutFor(ms: number): void {
    this.socket?.terminate();
    this.holdUntil = Date.now() + ms;
  }
  private holdUntil = 0;

  /** The next numbered log line (the drill compares them with what was stored). */
  log(level: "info" | "debug" = "info"): void {
    this.logsMade++;
    this.lineTimes.push(Date.now());
    this.lineLevels.push(level);
    this.append({ kind: "log", command_id: null, deployment_id: null, level, message: `drill-line ${this.logsMade}`, step: null });
  }

  /** Journals an event and sends it when the link is up (else it waits for the next `ready`). */
  append(body: EventInput): Event {
    const e = this.journal.append(body, this.now().toISOString());
    if (this.connected) this.sendEvents([e]);
    return e;
  }

  private send<T extends MessageType>(type: T, payload: Payload<T>): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(encodeFrame(type, payload));
  }

  private sendEvents(events: Event[]): void {
    for (let i = 0; i < events.length; i += MAX_EVENTS_PER_BATCH) this.send("events", { events: events.slice(i, i + MAX_EVENTS_PER_BATCH) });
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.attempt++;
    // The real agent's shape: capped, jittered exponential backoff from 1 s (capped lower here).
    const base = Math.min(1000 * 2 ** Math.min(this.attempt - 1, 3), 8000);
    const delay = Math.max(base * (0.5 + Math.random() * 0.5), this.holdUntil - Date.now());
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private connect(): void {
    if (this.stopped) return;
    const ws = new WebSocket((this.opts.connectUrl ?? this.opts.url).replace(/^http/, "ws") + AGENT_CONNECT_PATH, { handshakeTimeout: 10_000 });
    this.socket = ws;
    ws.on("message", (data) => this.onFrame(ws, data.toString()));
    ws.on("close", (code) => {
      if (this.socket !== ws) return;
      this.closes.push(code);
      this.connected = false;
      if (this.pingTimer) clearInterval(this.pingTimer);
      this.pingTimer = null;
      if (code === 4004) return; // replaced by a newer connection of ours
      this.scheduleReconnect();
    });
    ws.on("error", () => {});
  }

  private onFrame(ws: WebSocket, text: string): void {
    const parsed = parseFrame(text, { accept: CONTROL_PLANE_MESSAGE_TYPES });
    if (!parsed.ok) return;
    const f = parsed.frame;
    if (f.type === "challenge") {
      ws.send(
        encodeFrame("hello", {
          server_id: this.serverId,
          agent_version: "drill-sim-1.0.0",
          protocol_versions: [...PROTOCOL_VERSIONS],
          capabilities: ["diagnostics"],
          last_command_seq: this.lastCommandSeq,
          next_event_seq: this.journal.nextSeq(),
          challenge_signature: signChallenge((f.payload as Payload<"challenge">).nonce, this.serverId, this.keys.privateKey),
        }),
      );
    } else if (f.type === "ready") {
      const ready = f.payload as Payload<"ready">;
      this.connected = true;
      this.connects++;
      this.attempt = 0;
      this.journal.ack(ready.resend_from - 1);
      this.sendEvents(this.journal.from(ready.resend_from));
      this.pingTimer = setInterval(() => this.send("ping", { ts: this.now().toISOString() }), ready.heartbeat_ms);
    } else if (f.type === "command") {
      this.onCommand(f.payload as SignedCommand);
    } else if (f.type === "events.ack") {
      this.journal.ack((f.payload as Payload<"events.ack">).up_to_seq);
    }
  }

  private onCommand(cmd: SignedCommand): void {
    const trustedKeys = new Map(this.identity.signing_keys.map((k) => [k.key_id, importPublicKey(k.public_key)]));
    const recorded = this.results.get(cmd.command_id);
    if (recorded) {
      // Already run: acknowledge again; its result is in the journal until acknowledged.
      this.redeliveries++;
      this.send("command.accepted", { command_id: cmd.command_id, seq: cmd.seq });
      return;
    }
    const verdict = verifyCommand(cmd, { trustedKeys, serverId: this.serverId, now: this.now() });
    if (!verdict.ok) {
      this.rejected.push({ command_id: cmd.command_id, code: verdict.code });
      this.send("command.rejected", { command_id: cmd.command_id, code: verdict.code, message: verdict.message });
      return;
    }
    this.lastCommandSeq = Math.max(this.lastCommandSeq, cmd.seq);
    this.send("command.accepted", { command_id: cmd.command_id, seq: cmd.seq });
    this.executions.set(cmd.command_id, (this.executions.get(cmd.command_id) ?? 0) + 1);
    // The work takes a moment; its result is journaled like every event.
    const placeholder = { seq: 0 } as Event;
    this.results.set(cmd.command_id, placeholder);
    setTimeout(() => {
      const e = this.append({ kind: "command.result", command_id: cmd.command_id, ok: true, result: {} });
      this.results.set(cmd.command_id, e);
    }, 100 + Math.random() * 400);
  }
}
