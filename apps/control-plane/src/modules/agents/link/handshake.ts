// The link's handshake: the control plane sends a challenge, the agent answers hello (its
// server id, the challenge signed with its enrolled key, the protocol versions it speaks),
// and the control plane answers ready (the version chosen, the heartbeat, where to resend
// events from) or a nack and a close. One connection per server across all replicas: the
// newest takes over, and a notice on the takeover channel tells the replica holding an older
// one to close it.
import { CLOSE_CODES, PROTOCOL_VERSIONS, importPublicKey, negotiateVersion, verifyChallenge, type Payload } from "@berth/protocol";
import { close, send, type Connection } from "./connection.ts";
import type { HelloServer, LinkRepo } from "./link.repo.ts";

export type HelloVerdict =
  | { ok: true; version: number; resendFrom: number }
  | { ok: false; code: "auth_failed" | "no_common_version"; message: string; closeCode: number; reason: string };

/**
 * Whether a hello may open the link: the challenge must be signed with the key the server
 * enrolled (an unknown, deleted or never enrolled server fails alike), then the two sides
 * must share a protocol version (the highest common one is chosen).
 */
export function checkHello(
  nonce: string,
  hello: Pick<Payload<"hello">, "server_id" | "challenge_signature" | "protocol_versions">,
  server: HelloServer | undefined,
  ours: readonly number[] = PROTOCOL_VERSIONS,
): HelloVerdict {
  const ok =
    !!server?.agent_public_key && verifyChallenge(nonce, hello.server_id, hello.challenge_signature, importPublicKey(server.agent_public_key));
  if (!ok) {
    const message = "challenge signature did not verify for this server";
    return { ok: false, code: "auth_failed", message, closeCode: CLOSE_CODES.auth_failed, reason: "authentication failed" };
  }
  const version = negotiateVersion(ours, hello.protocol_versions);
  if (version === null) {
    const message = `control plane speaks ${ours.join(", ")}`;
    return { ok: false, code: "no_common_version", message, closeCode: CLOSE_CODES.no_common_version, reason: "no common protocol version" };
  }
  return { ok: true, version, resendFrom: Number(server!.last_event_seq) + 1 };
}

export interface HandshakeOptions {
  repo: Pick<LinkRepo, "helloServer" | "recordSession" | "sessionConnection">;
  /** Server id -> the connection this replica holds for it. */
  live: Map<string, Connection>;
  replicaId: string;
  heartbeatMs: number;
  /** Sends what waits in the outbox, once the link is ready. */
  deliver(conn: Connection): Promise<void>;
  /** The hello verified and the session recorded: called just before `ready` goes out (the handshake's limits end). */
  opened(conn: Connection): void;
  log: { info(o: object, m: string): void; warn(o: object, m: string): void };
}

export function createHandshake(opts: HandshakeOptions) {
  const { live } = opts;

  /**
   * A notice can arrive late (an older connection's, after a newer one registered here): the
   * session row, written before its notice, names the connection that stays.
   */
  async function closeIfSuperseded(conn: Connection) {
    const holder = await opts.repo.sessionConnection(conn.serverId);
    if (holder !== conn.id && live.get(conn.serverId!) === conn) {
      close(conn, CLOSE_CODES.replaced, "replaced by a newer connection");
    }
  }

  return {
    challenge(conn: Connection) {
      send(conn, "challenge", { nonce: conn.nonce, server_time: new Date().toISOString() });
    },

    async onHello(conn: Connection, hello: Payload<"hello">) {
      const verdict = checkHello(conn.nonce, hello, await opts.repo.helloServer(hello.server_id));
      if (!verdict.ok) {
        send(conn, "nack", { ref_id: null, code: verdict.code, message: verdict.message });
        return close(conn, verdict.closeCode, verdict.reason);
      }
      conn.serverId = hello.server_id;
      const previous = live.get(hello.server_id);
      live.set(hello.server_id, conn);
      if (previous && previous !== conn) close(previous, CLOSE_CODES.replaced, "replaced by a newer connection");
      await opts.repo.recordSession(hello.server_id, opts.replicaId, conn.id, hello.agent_version);
      conn.version = verdict.version;
      opts.opened(conn);
      send(conn, "ready", { protocol_version: verdict.version, heartbeat_ms: opts.heartbeatMs, resend_from: verdict.resendFrom });
      conn.ready = true;
      opts.log.info({ serverId: hello.server_id, agentVersion: hello.agent_version }, "agent connected");
      await opts.deliver(conn);
    },

    /** Another connection holds the server's agent now (server_id:connection_id): an older one held here closes. */
    onTakeoverNotice(payload: string) {
      const [serverId, connectionId] = payload.split(":");
      const conn = serverId ? live.get(serverId) : undefined;
      // Not ready: its session is being recorded, and its own notice will settle who stays.
      if (conn?.ready && conn.id !== connectionId) void closeIfSuperseded(conn).catch((err) => opts.log.warn({ err }, "takeover check failed"));
    },
  };
}
export type Handshake = ReturnType<typeof createHandshake>;
