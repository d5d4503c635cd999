// What the drill reads back from PostgreSQL to judge each fault: which agents hold a session
// (and since when), what was stored of each agent's events and commands, which operations
// are still open, and the rows of each organisation's event stream. Plain SQL over pg: the
// drill is a test program reading the product's tables, not part of the product.
import pg from "pg";

export const TERMINAL_DEPLOYMENT_STATUSES = ["success", "failed", "cancelled", "rolled_back", "destroyed"];
export const TERMINAL_COMMAND_STATES = ["succeeded", "failed", "rejected", "expired"];

export interface Session {
  replicaId: string;
  connectionId: string;
  connectedAt: number;
}

/** An operation (a deployments row) of one of the drill's organisations. */
export interface Operation {
  id: string;
  organizationId: string;
  kind: string;
  status: string;
  error: string | null;
  createdAt: number;
}

export class Ledger {
  readonly pool: pg.Pool;
  constructor(url: string) {
    this.pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5000 });
    // PostgreSQL restarts under the drill: an idle client's error must not crash it.
    this.pool.on("error", () => {});
  }

  async sessions(): Promise<Map<string, Session>> {
    const { rows } = await this.pool.query<{ server_id: string; replica_id: string; connection_id: string; ms: string }>(
      "select server_id, replica_id, connection_id, (extract(epoch from connected_at) * 1000)::bigint::text as ms from agent_sessions",
    );
    return new Map(rows.map((r) => [r.server_id, { replicaId: r.replica_id, connectionId: r.connection_id, connectedAt: Number(r.ms) }]));
  }

  /** Per server: the numbers of the drill's log lines stored, with how many rows each. */
  async storedLines(serverIds: string[]): Promise<Map<string, Map<number, number>>> {
    const { rows } = await this.pool.query<{ server_id: string; n: number; c: number }>(
      `select server_id, substring(body->>'message' from 'drill-line ([0-9]+)')::int as n, count(*)::int as c
         from agent_events where server_id = any($1::uuid[]) and kind = 'log' and body->>'message' like 'drill-line %'
        group by 1, 2`,
      [serverIds],
    );
    const out = new Map<string, Map<number, number>>(serverIds.map((s) => [s, new Map()]));
    for (const r of rows) out.get(r.server_id)!.set(r.n, r.c);
    return out;
  }

  /** Every command issued to these servers, with its state, how many results were stored for it, and its deployment. */
  async commands(serverIds: string[]): Promise<{ commandId: string; serverId: string; state: string; createdAt: number; deploymentId: string | null; results: number }[]> {
    const { rows } = await this.pool.query<{ command_id: string; server_id: string; state: string; ms: string; deployment_id: string | null; results: number }>(
      `select c.command_id, c.server_id, c.state, (extract(epoch from c.created_at) * 1000)::bigint::text as ms, c.deployment_id,
              (select count(*)::int from agent_events e where e.server_id = c.server_id and e.kind = 'command.result' and e.command_id = c.command_id) as results
         from agent_commands c where c.server_id = any($1::uuid[])`,
      [serverIds],
    );
    return rows.map((r) => ({ commandId: r.command_id, serverId: r.server_id, state: r.state, createdAt: Number(r.ms), deploymentId: r.deployment_id, results: r.results }));
  }

  async deployments(organizationIds: string[]): Promise<Operation[]> {
    const { rows } = await this.pool.query<{ id: string; organization_id: string; kind: string; status: string; error_message: string | null; ms: string }>(
      "select id, organization_id, kind, status, error_message, (extract(epoch from created_at) * 1000)::bigint::text as ms from deployments where organization_id = any($1::uuid[])",
      [organizationIds],
    );
    return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, kind: r.kind, status: r.status, error: r.error_message, createdAt: Number(r.ms) }));
  }

  /** The stream rows of an organisation at or after a position of each table: "l:<tx>.<id>" / "e:<tx>.<id>", with their time. */
  async streamRows(organizationId: string, from: { log: [bigint, bigint]; ev: [bigint, bigint] }): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const logs = await this.pool.query<{ tx: string; id: string; ms: string }>(
      `select tx::text as tx, id::text as id, (extract(epoch from ts) * 1000)::bigint::text as ms from deployment_logs
        where organization_id = $1 and (tx > $2::text::xid8 or (tx = $2::text::xid8 and id >= $3::bigint))`,
      [organizationId, from.log[0].toString(), from.log[1].toString()],
    );
    for (const r of logs.rows) out.set(`l:${r.tx}.${r.id}`, Number(r.ms));
    const evs = await this.pool.query<{ tx: string; id: string; ms: string }>(
      `select tx::text as tx, id::text as id, (extract(epoch from created_at) * 1000)::bigint::text as ms from org_events
        where organization_id = $1 and (tx > $2::text::xid8 or (tx = $2::text::xid8 and id >= $3::bigint))`,
      [organizationId, from.ev[0].toString(), from.ev[1].toString()],
    );
    for (const r of evs.rows) out.set(`e:${r.tx}.${r.id}`, Number(r.ms));
    return out;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** A stream frame id `<logTx>.<logId>-<evTx>.<evId>-<unixSeconds>` split into its two positions. */
export function positionsOf(id: string): { log: string; ev: string } | null {
  const m = /^(\d+\.\d+)-(\d+\.\d+)-\d+$/.exec(id);
  return m ? { log: m[1]!, ev: m[2]! } : null;
}
