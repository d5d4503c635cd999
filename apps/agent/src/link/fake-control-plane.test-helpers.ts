// A tiny control plane for the agent's tests, speaking the real protocol over a real socket:
// HTTP enrolment and the WebSocket link on one port. It verifies each hello's challenge
// signature, stores events de-duplicated by seq, acknowledges cumulatively up to the
// highest seq stored, answers pings, and can be told to misbehave (no acks, no pongs).
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import {
  AGENT_CONNECT_PATH,
  AGENT_ENROLL_PATH,
  AGENT_MESSAGE_TYPES,
  encodeFrame,
  exportPublicKey,
  generateKeyPair,
  importPublicKey,
  keyIdFor,
  parseFrame,
  verifyChallenge,
  type EnrollRequest,
  type EnrollResponse,
  type Event,
  type Frame,
  type Hello,
  type KeyObject,
  type MessageType,
  type Payload,
  type SignedCommand,
} from "@berth/protocol";

export interface FakeConnection {
  index: number;
  socket: WebSocket;
  nonce: string;
  hello: Hello | null;
  /** Every frame the agent sent on this connection, in order. */
  frames: Frame[];
  /** Raw texts of frames that did not parse. */
  garbage: string[];
  closed: Promise<{ code: number; reason: string }>;
  send<T extends MessageType>(type: T, payload: Payload<T>, id?: string): string;
  sendRaw(text: string): void;
}

export interface FakeControlPlane {
  /** Base URL (http://127.0.0.1:port). */
  url: string;
  /** Full ws:// URL of the connect endpoint. */
  connectUrl: string;
  connections: FakeConnection[];
  /** Events stored, by seq (a resent seq overwrites the same entry). */
  stored: Map<number, Event>;
  /** Every events frame received, for batch-size checks. */
  batches: Event[][];
  enrollRequests: EnrollRequest[];
  settings: {
    heartbeatMs: number;
    autoAck: boolean;
    answerPings: boolean;
    /** resend_from for a new connection; default highest stored + 1. */
    resendFrom: ((hello: Hello) => number) | null;
    /** Called once a connection got `ready`, e.g. to cut it. */
    afterReady: ((connection: FakeConnection) => void) | null;
    /** Answer of POST /agent/v1/enroll; default enrols with a fresh server id. */
    enroll: (request: EnrollRequest) => { status: number; body: unknown };
  };
  trust(serverId: string, publicKey: KeyObject): void;
  highestStored(): number;
  /** The key it signs commands with, pinned by agents at enrolment. */
  signing: { privateKey: KeyObject; publicKey: KeyObject; keyId: string };
  /** Connection `index` (0 = first), once it got `ready`. */
  readyConnection(index: number, timeoutMs?: number): Promise<FakeConnection>;
  close(): Promise<void>;
}

export async function startFakeControlPlane(): Promise<FakeControlPlane> {
  const agentKeys = new Map<string, KeyObject>();
  const readySeen = new Set<number>();
  let highest = 0;
  const { privateKey, publicKey } = generateKeyPair();
  const signing = { privateKey, publicKey, keyId: keyIdFor(publicKey) };
  const http: Server = createServer((req, res) => void handleHttp(req, res));
  const wss = new WebSocketServer({ server: http, path: AGENT_CONNECT_PATH });

  const cp: FakeControlPlane = {
    url: "",
    connectUrl: "",
    connections: [],
    stored: new Map(),
    batches: [],
    enrollRequests: [],
    settings: {
      heartbeatMs: 1_000,
      autoAck: true,
      answerPings: true,
      resendFrom: null,
      afterReady: null,
      enroll: (request) => {
        const serverId = randomUUID();
        cp.trust(serverId, importPublicKey(request.public_key));
        const body: EnrollResponse = {
          server_id: serverId,
          signing_keys: [{ key_id: signing.keyId, public_key: exportPublicKey(signing.publicKey) }],
          connect_path: AGENT_CONNECT_PATH,
        };
        return { status: 201, body };
      },
    },
    trust: (serverId, publicKey) => void agentKeys.set(serverId, publicKey),
    highestStored: () => highest,
    signing,
    async readyConnection(index, timeoutMs = 10_000) {
      await eventually(() => readySeen.has(index), `connection ${index} to reach ready`, timeoutMs);
      const connection = cp.connections[index];
      if (connection === undefined) throw new Error(`no connection ${index}`);
      return connection;
    },
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise((resolve) => wss.close(resolve));
      await new Promise((resolve) => http.close(resolve));
    },
  };

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "POST" || req.url !== AGENT_ENROLL_PATH) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "route_not_found", message: "no" }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as EnrollRequest;
    cp.enrollRequests.push(request);
    const answer = cp.settings.enroll(request);
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  }

  wss.on("connection", (socket) => {
    const index = cp.connections.length;
    let version = 1;
    let ready = false;
    const connection: FakeConnection = {
      index,
      socket,
      nonce: randomBytes(32).toString("base64"),
      hello: null,
      frames: [],
      garbage: [],
      closed: new Promise((resolve) => socket.on("close", (code, reason) => resolve({ code, reason: reason.toString() }))),
      send(type, payload, id) {
        const frameId = id ?? randomUUID();
        if (socket.readyState === socket.OPEN) socket.send(encodeFrame(type, payload, { v: version, id: frameId }));
        return frameId;
      },
      sendRaw: (text) => socket.send(text),
    };
    cp.connections.push(connection);
    connection.send("challenge", { nonce: connection.nonce, server_time: new Date().toISOString() });

    socket.on("message", (data) => {
      const text = (data as Buffer).toString("utf8");
      const parsed = parseFrame(text, { accept: AGENT_MESSAGE_TYPES });
      if (!parsed.ok) {
        connection.garbage.push(text);
        return;
      }
      const frame = parsed.frame;
      connection.frames.push(frame);
      switch (frame.type) {
        case "hello": {
          connection.hello = frame.payload;
          const key = agentKeys.get(frame.payload.server_id);
          if (key === undefined || !verifyChallenge(connection.nonce, frame.payload.server_id, frame.payload.challenge_signature, key)) {
            connection.send("nack", { ref_id: frame.id, code: "auth_failed", message: "challenge signature does not verify" });
            socket.close(4001, "auth failed");
            return;
          }
          const resendFrom = cp.settings.resendFrom?.(frame.payload) ?? cp.highestStored() + 1;
          connection.send("ready", { protocol_version: 1, heartbeat_ms: cp.settings.heartbeatMs, resend_from: resendFrom });
          version = 1;
          ready = true;
          readySeen.add(index);
          cp.settings.afterReady?.(connection);
          return;
        }
        case "ping":
          if (ready && cp.settings.answerPings) connection.send("pong", { ts: frame.payload.ts });
          return;
        case "events":
          cp.batches.push(frame.payload.events);
          for (const event of frame.payload.events) {
            cp.stored.set(event.seq, event);
            highest = Math.max(highest, event.seq);
          }
          if (cp.settings.autoAck) connection.send("events.ack", { up_to_seq: cp.highestStored() });
          return;
        default:
          return;
      }
    });
  });

  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  cp.url = `http://127.0.0.1:${port}`;
  cp.connectUrl = `ws://127.0.0.1:${port}${AGENT_CONNECT_PATH}`;
  return cp;
}

/** Frames of one type the agent sent on a connection. */
export function framesOf<T extends MessageType>(connection: FakeConnection, type: T): Array<Frame<T>> {
  return connection.frames.filter((frame): frame is Frame<T> => frame.type === type);
}

/** Sends a command and returns the frame id it went under. */
export function sendCommand(connection: FakeConnection, command: SignedCommand): string {
  return connection.send("command", command);
}

/** Polls until `check` holds; fails with `what` after the timeout. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
