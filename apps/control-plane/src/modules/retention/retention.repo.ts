// The statements of the retention job (retention.ts decides what to keep): the monthly
// partitions of the time-partitioned tables (migration 0022 made them and the SQL function
// berth_ensure_partition that makes one), dropping a whole expired month, and deleting the
// expired rows that sit in a table's DEFAULT partition; and deleting the ended commands of the
// outbox, agent_commands.
import type pg from "pg";
import { deleteInChunks } from "../../db/chunked-delete.ts";

type Client = Pick<pg.PoolClient, "query">;

/** The tables migration 0022 partitioned by month on `ts`. */
export type PartitionedTable = "deployment_logs" | "agent_events";

/** The job's advisory lock: one run at a time across replicas ("rete"). */
const RETENTION_LOCK = 0x72657465;

/** A lock wait longer than this gives up (the next run tries again) rather than queue every writer behind it. */
const LOCK_TIMEOUT = "5s";

/** Rows per delete statement in a DEFAULT partition, so no delete holds a long transaction. */
export const DELETE_CHUNK = 5000;

/** Takes the job's lock for the session; false when another run holds it. */
export async function tryRetentionLock(client: Client): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>("select pg_try_advisory_lock($1) as ok", [RETENTION_LOCK]);
  return rows[0]!.ok;
}

export async function releaseRetentionLock(client: Client): Promise<void> {
  await client.query("select pg_advisory_unlock($1)", [RETENTION_LOCK]);
}

/** Makes the partition of the month holding `monthStart` unless it exists (moving that month's rows out of DEFAULT); true if made. */
export async function ensurePartition(client: Client, table: PartitionedTable, monthStart: Date): Promise<boolean> {
  await client.query("begin");
  try {
    await client.query(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    const { rows } = await client.query<{ made: boolean }>("select berth_ensure_partition($1::regclass, $2) as made", [table, monthStart]);
    await client.query("commit");
    return rows[0]!.made;
  } catch (err) {
    await client.query("rollback").catch(() => {});
    throw err;
  }
}

/** The month partitions of a table (DEFAULT excluded): name and the first instant of its month. */
export async function monthPartitions(client: Client, table: PartitionedTable): Promise<{ name: string; month: Date }[]> {
  const { rows } = await client.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass and c.relname ~ '_p[0-9]{6}$' order by c.relname`,
    [table],
  );
  return rows.map(({ name }) => {
    const ym = name.slice(-6);
    return { name, month: new Date(Date.UTC(Number(ym.slice(0, 4)), Number(ym.slice(4)) - 1, 1)) };
  });
}

/** Detaches a month partition and drops it, in one short transaction. */
export async function dropPartition(client: Client, table: PartitionedTable, partition: string): Promise<void> {
  if (!new RegExp(`^${table}_p[0-9]{6}$`).test(partition)) throw new Error(`${partition} is not a month partition of ${table}`);
  await client.query("begin");
  try {
    await client.query(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    await client.query(`alter table ${table} detach partition "${partition}"`);
    await client.query(`drop table "${partition}"`);
    await client.query("commit");
  } catch (err) {
    await client.query("rollback").catch(() => {});
    throw err;
  }
}

/** Deletes the rows of a table's DEFAULT partition dated before `before`, in chunks; how many went. */
export async function deleteExpiredFromDefault(client: Client, table: PartitionedTable, before: Date): Promise<number> {
  return deleteInChunks(
    client,
    `delete from ${table}_default where ctid = any(array(select ctid from ${table}_default where ts < $1 limit ${DELETE_CHUNK}))`,
    [before],
    DELETE_CHUNK,
  );
}

/**
 * Deletes the commands issued before `before` that ended (neither pending nor accepted) and no
 * audit entry names, in chunks (the created_at index finds them); how many went.
 */
export async function deleteEndedCommands(client: Client, before: Date): Promise<number> {
  return deleteInChunks(
    client,
    `delete from agent_commands where command_id = any(array(
       select c.command_id from agent_commands c
       where c.created_at < $1 and c.state not in ('pending', 'accepted')
         and not exists (select 1 from audit_log a where a.command_id = c.command_id)
       limit ${DELETE_CHUNK}))`,
    [before],
    DELETE_CHUNK,
  );
}
