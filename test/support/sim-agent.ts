// A lightweight agent built on packages/protocol: enrols over HTTP, speaks the link over a
// real WebSocket, verifies commands like the real agent. Used by gateway tests and the
// fleet benchmark; the real agent process is tested end to end elsewhere.
import WebSocket from "ws";
import {
  AGENT_CONNECT_PATH,
  AGENT_ENROLL_PATH,
  CONTROL_PLANE_MESSAGE_TYPES,
  PROTOCOL_VERSIONS,
  encodeFrame,
  exportPublicKey,
  generateKeyPair,
  importPublicKey,
  parseFrame,
  signChallenge,
  verifyCommand,
  type EnrollResponse,
  type Event,
  type KeyPair,
  type Payload,
  type SignedCommand,
} from "@berth/protocol";

export interface SimAgentOptions {
  baseUrl: string;
  token: string;
  onCommand?: (cmd: SignedCommand, agent: SimAgent) => void;
  /** The agent's clock (command validity, event times); real time unless a test moves the control plane's clock too. */
  now?: () => Date;
}

/** Enrols a simulated agent over POST /agent/v1/enroll; a refusal throws with its status and body. */
export async function enrollSimulatedAgent(baseUrl: string, token: string, keys: KeyPair, as: { agentVersion: string; host: Record<string, unknown> }): Promise<EnrollResponse> {
  const res = await fetch(`${baseUrl}${AGENT_ENROLL_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token, public_key: exportPublicKey(keys.publicKey), agent_version: as.agentVersion, host: as.host }),
  });
  const body = await res.json();
  if (res.status !== 200) throw Object.assign(new Error(`enroll failed: ${res.status} ${JSON.stringify(body)}`), { status: res.status, body });
  return body as EnrollResponse;
}

export class SimAgent {
  readonly keys: KeyPair = generateKeyPair();
  identity!: EnrollResponse;
  socket: WebSocket | null = null;
  ready: Payload<"ready"> | null = null;
  nextSeq = 1;
  ackedUpTo = 0;
  readonly received: SignedCommand[] = [];
  readonly rejected: { command_id: string; code: string }[] = [];
  /** Frames the control plane refused. */
  readonly nacks: Payload<"nack">[] = [];
  readonly closes: number[] = [];
  private waiters: (() => void)[] = [];

  constructor(readonly opts: SimAgentOptions) {}

  async enroll(): Promise<EnrollResponse> {
    this.identity = await enrollSimulatedAgent(this.opts.baseUrl, this.opts.token, this.keys, {
      agentVersion: "sim-1.0.0",
      host: { hostname: "sim-host", os: "Debian 12", arch: "x64", cpu_cores: 8, ram_mb: 32768, disk_gb: 500, docker_version: "28.2.2" },
    });
    return this.identity;
  }

  /** Opens the link and resolves once `ready` arrives; `headers` go with the upgrade request (X-Forwarded-For). */
  connect(baseUrl = this.opts.baseUrl, opts: { signWith?: KeyPair; serverId?: string; headers?: Record<string, string> } = {}): Promise<Payload<"ready">> {
    const ws = new WebSocket(baseUrl.replace(/^http/, "ws") + AGENT_CONNECT_PATH, opts.headers ? { headers: opts.headers } : {});
    this.socket = ws;
    this.ready = null;
    return new Promise((resolve, reject) => {
      ws.on("message", (data) => {
        const parsed = parseFrame(data.toString(), { accept: CONTROL_PLANE_MESSAGE_TYPES });
        if (!parsed.ok) return;
        const f = parsed.frame;
        if (f.type === "challenge") {
          const serverId = opts.serverId ?? this.identity.server_id;
          const key = (opts.signWith ?? this.keys).privateKey;
          ws.send(
            encodeFrame("hello", {
              server_id: serverId,
              agent_version: "sim-1.0.0",
              protocol_versions: [...PROTOCOL_VERSIONS],
              capabilities: ["diagnostics"],
              last_command_seq: 0,
              next_event_seq: this.nextSeq,
              challenge_signature: signChallenge((f.payload as Payload<"challenge">).nonce, serverId, key),
            }),
          );
        } else if (f.type === "ready") {
          this.ready = f.payload as Payload<"ready">;
          resolve(this.ready);
        } else if (f.type === "command") {
          this.onCommand(f.payload as SignedCommand);
        } else if (f.type === "events.ack") {
          this.ackedUpTo = Math.max(this.ackedUpTo, (f.payload as Payload<"events.ack">).up_to_seq);
        } else if (f.type === "nack") {
          this.nacks.push(f.payload as Payload<"nack">);
        }
        this.notify();
      });
      ws.on("close", (code) => {
        this.closes.push(code);
        if (!this.ready) reject(Object.assign(new Error(`closed during handshake: ${code}`), { code }));
        this.notify();
      });
      ws.on("error", () => {});
    });
  }

  private onCommand(cmd: SignedCommand) {
    const trustedKeys = new Map(this.identity.signing_keys.map((k) => [k.key_id, importPublicKey(k.public_key)]));
    const verdict = verifyCommand(cmd, { trustedKeys, serverId: this.identity.server_id, now: this.opts.now?.() ?? new Date() });
    this.received.push(cmd);
    if (!verdict.ok) {
      this.rejected.push({ command_id: cmd.command_id, code: verdict.code });
      this.send("command.rejected", { command_id: cmd.command_id, code: verdict.code, message: verdict.message });
      return;
    }
    this.send("command.accepted", { command_id: cmd.command_id, seq: cmd.seq });
    this.opts.onCommand?.(cmd, this);
  }

  send<T extends Parameters<typeof encodeFrame>[0]>(type: T, payload: Parameters<typeof encodeFrame<T>>[1]) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(encodeFrame(type, payload));
  }

  /** Sends events with explicit seqs (tests resend on purpose). */
  sendEvents(events: Event[]) {
    this.send("events", { events });
  }

  /** An event of `body` with the next seq and the time now. */
  event(body: Record<string, unknown>): Event {
    return { seq: this.nextSeq++, ts: (this.opts.now?.() ?? new Date()).toISOString(), ...body } as Event;
  }

  /** Sends events and waits until the control plane has acknowledged all of them (one batch on the wire, as the agent keeps it). */
  async sendAcked(events: Event[], timeoutMs = 10_000): Promise<void> {
    this.sendEvents(events);
    const last = events[events.length - 1]!.seq;
    await this.until(() => this.ackedUpTo >= last, timeoutMs, `the ack of seq ${last}`);
  }

  /** Builds log events with fresh seqs. */
  logs(n: number, message = "line"): Event[] {
    return Array.from({ length: n }, () => ({
      seq: this.nextSeq++,
      ts: new Date().toISOString(),
      kind: "log" as const,
      command_id: null,
      deployment_id: null,
      level: "info" as const,
      message,
      step: null,
    }));
  }

  ping() {
    this.send("ping", { ts: new Date().toISOString() });
  }

  async until(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  private notify() {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  close() {
    this.socket?.close(1000);
  }
}

