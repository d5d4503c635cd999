// What the agent link reads and writes: the server's key and event watermark for the
// handshake, the session (which replica and connection hold the agent), online and offline,
// and last_seen_at. last_seen_at goes to the relaxed pool (a database crash may lose it at
// no cost, lib/relaxed-pool.ts); the rest to the pool.
import type pg from "pg";
import { TAKEOVER_CHANNEL } from "../channels.ts";

export interface HelloServer {
  agent_public_key: string | null;
  /** The highest event seq stored for the server (bigint as text; 0 before any). */
  last_event_seq: string;
}

export function createLinkRepo(pool: pg.Pool, relaxedPool: pg.Pool = pool) {
  return {
    /** The enrolled key and event watermark of a server that exists and is not deleted. */
    async helloServer(serverId: string): Promise<HelloServer | undefined> {
      const { rows } = await pool.query<HelloServer>(
        `select s.agent_public_key, coalesce(st.last_event_seq, 0) as last_event_seq
         from servers s left join agent_streams st on st.server_id = s.id where s.id = $1 and s.deleted_at is null`,
        [serverId],
      );
      return rows[0];
    },

    /**
     * The connection now holds the server's agent: its session, the server online (with the
     * agent's version) and the takeover notice, in one statement (one round trip).
     */
    async recordSession(serverId: string, replicaId: string, connectionId: string, agentVersion: string): Promise<void> {
      await pool.query(
        `with session as (
           insert into agent_sessions (server_id, replica_id, connection_id, connected_at) values ($1, $2, $3, now())
           on conflict (server_id) do update set replica_id = excluded.replica_id, connection_id = excluded.connection_id,
             connected_at = excluded.connected_at),
         online as (update servers set status = 'online', last_seen_at = now(), agent_version = $4 where id = $1)
         select pg_notify($5, $1::text || ':' || $3::text)`,
        [serverId, replicaId, connectionId, agentVersion, TAKEOVER_CHANNEL],
      );
    },

    /** The connection the server's session row names. */
    async sessionConnection(serverId: string | null): Promise<string | undefined> {
      const { rows } = await pool.query<{ connection_id: string }>("select connection_id from agent_sessions where server_id = $1", [serverId]);
      return rows[0]?.connection_id;
    },

    /** Ends the connection's session; the server goes offline unless another session holds it. */
    async endSession(serverId: string, connectionId: string): Promise<void> {
      await pool.query("delete from agent_sessions where server_id = $1 and connection_id = $2", [serverId, connectionId]);
      await pool.query(
        "update servers set status = 'offline', last_seen_at = now() where id = $1 and not exists (select 1 from agent_sessions where server_id = $1)",
        [serverId],
      );
    },

    /**
     * last_seen_at = now() for these servers, skipping rows locked right now (a command being
     * issued): nothing waits for it. Returns the ids written.
     */
    async touchLastSeen(serverIds: string[]): Promise<string[]> {
      const { rows } = await relaxedPool.query<{ id: string }>(
        `update servers s set last_seen_at = now()
         from (select id from servers where id = any($1::uuid[]) for update skip locked) as l where s.id = l.id
         returning s.id`,
        [serverIds],
      );
      return rows.map((r) => r.id);
    },
  };
}
export type LinkRepo = ReturnType<typeof createLinkRepo>;
