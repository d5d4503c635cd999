// Stores agents' event batches durably, then says how far to acknowledge each. The server's
// watermark (highest seq stored) and the (server_id, seq) key make resends harmless: an
// event is stored once however often it arrives.
//
// Group commit: batches that arrive while a write is in flight wait and go together in the
// next transaction, a few set-based statements for all of them. Ten thousand agents sending
// stats every 10 s are then a few dozen commits a second, not a thousand; an idle control
// plane still writes a lone batch at once. At most `concurrency` writes run at a time, so
// ingestion never holds more than that many of the pool's connections. The statements are
// event-ingest.repo.ts's.
import type pg from "pg";
import type { CommandResultEvent, Event, LogEvent, StatsEvent } from "@berth/protocol";
import { inTransaction } from "../../db/transaction.ts";
import { announce, appendOrgEvents, type OrgEvent } from "../events/event-log.repo.ts";
import {
  advanceStreams,
  createMissingStreams,
  endCommands,
  insertEvents,
  lockStreams,
  storeDeploymentLogs,
  upsertStats,
  type AgentLogLine,
  type StoredEvent,
} from "./event-ingest.repo.ts";

export interface Ingested {
  /** The seq to acknowledge (everything up to it is stored). */
  upTo: number;
  /**
   * Events of this batch's write that named another server's deployment or command: acknowledged
   * (the agent's journal moves on) but not applied, their log lines not stored.
   */
  refused: number;
}

export interface EventIngest {
  /**
   * Stores the server's events. `through`: the highest seq the batch covered, when events the
   * link dropped (a log budget) came after the last one given: the watermark and the ack
   * move to it, so the agent forgets the dropped ones and they are never taken again.
   */
  ingest(serverId: string, events: Event[], through?: number): Promise<Ingested>;
}

/**
 * Called inside the ingest transaction with a server's fresh (never seen) events, for derived
 * state. Applies only what concerns that server's own operations; resolves with how many
 * events it refused for naming another server's.
 */
export type EventApplier = (client: pg.PoolClient, serverId: string, fresh: Event[], organizationId: string) => Promise<number>;

export interface IngestOptions {
  pool: pg.Pool;
  /** Where the live-event NOTIFY goes after each commit (a relaxed pool: it writes nothing). */
  announcePool?: pg.Pool;
  appliers?: EventApplier[];
  /** Writes in flight at once (each holds one pool connection). */
  concurrency?: number;
  /** A write takes waiting batches until it holds about this many events. */
  maxEventsPerWrite?: number;
}

interface Batch {
  serverId: string;
  events: Event[];
  /** The highest seq the batch covered (0: its last event's). */
  through: number;
  resolve(result: Ingested): void;
  reject(err: unknown): void;
}

/** A deployment's log lines live in deployment_logs (its history and the live stream), not agent_events. */
const isDeploymentLog = (e: Event): e is LogEvent & { deployment_id: string } => e.kind === "log" && e.deployment_id !== null;

export class UnknownServerError extends Error {
  constructor(serverId: string) {
    super(`server ${serverId} does not exist (deleted while its agent was connected?)`);
    this.name = "UnknownServerError";
  }
}

export function createEventIngest(opts: IngestOptions): EventIngest {
  const concurrency = opts.concurrency ?? 3;
  const maxEvents = opts.maxEventsPerWrite ?? 10_000;
  const waiting: Batch[] = [];
  let running = 0;
  /** Servers whose agent_streams row exists (rows are never deleted). */
  const streams = new Set<string>();

  function take(): Batch[] {
    const taken: Batch[] = [];
    let events = 0;
    while (waiting.length > 0 && (taken.length === 0 || events + waiting[0]!.events.length <= maxEvents)) {
      const batch = waiting.shift()!;
      events += batch.events.length;
      taken.push(batch);
    }
    return taken;
  }

  function pump() {
    while (running < concurrency && waiting.length > 0) {
      const batches = take();
      running++;
      void settle(batches).finally(() => {
        running--;
        pump();
      });
    }
  }

  async function settle(batches: Batch[]) {
    let results: (Ingested | Error)[];
    try {
      results = await write(opts, streams, batches, false);
    } catch (err) {
      if (batches.length === 1 && !isDuplicate(err)) return batches[0]!.reject(err);
      // One agent's bad batch must not fail the others': write each on its own, and
      // tolerate rows already stored (see insertEvents in event-ingest.repo.ts).
      results = [];
      for (const batch of batches) {
        results.push(await write(opts, streams, [batch], true).then((r) => r[0]!, (e: unknown) => (e instanceof Error ? e : new Error(String(e)))));
      }
    }
    batches.forEach((batch, i) => {
      const result = results[i]!;
      if (!(result instanceof Error)) batch.resolve(result);
      else batch.reject(result);
    });
  }

  return {
    ingest(serverId, events, through = 0) {
      return new Promise<Ingested>((resolve, reject) => {
        waiting.push({ serverId, events, through, resolve, reject });
        pump();
      });
    },
  };
}

const isDuplicate = (err: unknown) => (err as { code?: string } | null)?.code === "23505";

/**
 * One transaction for all the batches; per batch, the seq to acknowledge or why it cannot be
 * stored. `tolerant`: rows already in agent_events are skipped instead of failing the write.
 */
async function write(opts: IngestOptions, streams: Set<string>, batches: Batch[], tolerant: boolean): Promise<(Ingested | Error)[]> {
  const done = await inTransaction(opts.pool, (client) => store(client, opts.appliers ?? [], streams, batches, tolerant));
  // Known only once committed: a rolled-back write may have made the rows it saw.
  if (streams.size > 100_000) streams.clear();
  for (const id of done.streams) streams.add(id);
  // Live readers hear of the new rows now; one that misses this reads them at its next poll.
  if (done.announce.length > 0) void announce(opts.announcePool ?? opts.pool, done.announce).catch(() => {});
  return done.results;
}

interface ServerState {
  watermark: number;
  organizationId: string;
  /** Events above the watermark, in the order they came. */
  fresh: Event[];
  /** The watermark moved (fresh events, or a batch's `through`). */
  moved: boolean;
  /** Fresh events naming another server's deployment or command (not applied). */
  refused: number;
}

/** The write's statements, in its transaction. */
async function store(client: pg.PoolClient, appliers: EventApplier[], streams: Set<string>, batches: Batch[], tolerant: boolean) {
  // The streams' rows (made with a server's first events) locked in id order: no deadlocks
  // between concurrent writes. The server rows themselves are only read.
  const ids = [...new Set(batches.map((b) => b.serverId))].sort();
  const unknown = ids.filter((id) => !streams.has(id));
  if (unknown.length > 0) await createMissingStreams(client, unknown);
  const rows = await lockStreams(client, ids);
  const servers = new Map(rows.map((r): [string, ServerState] => [r.id, { watermark: Number(r.last_event_seq), organizationId: r.organization_id, fresh: [], moved: false, refused: 0 }]));
  const { results, stored, logs, commandResults, stats } = sortEvents(batches, servers);

  await insertEvents(client, stored, tolerant);
  const logged = await storeDeploymentLogs(client, logs);
  for (const l of logged) servers.get(l.server_id)!.refused += l.refused;
  await storeStats(client, [...stats].map(([serverId, s]) => ({ serverId, organizationId: servers.get(serverId)!.organizationId, s })));
  await storeResults(client, commandResults, servers);
  const advanced = [...servers].filter(([, s]) => s.moved);
  for (const [serverId, s] of advanced) {
    if (s.fresh.length === 0) continue;
    for (const apply of appliers) s.refused += await apply(client, serverId, s.fresh, s.organizationId);
  }
  if (advanced.length > 0) {
    await advanceStreams(
      client,
      advanced.map(([id]) => id),
      advanced.map(([, s]) => s.watermark),
    );
  }
  const orgs = [...logged.flatMap((l) => (l.organization_id ? [l.organization_id] : [])), ...[...stats.keys()].map((id) => servers.get(id)!.organizationId)];
  // A server's refusals are told once, with its last batch of this write.
  const last = new Map(batches.map((b, i) => [b.serverId, i]));
  const ingested = results.map((r, i) => (typeof r === "number" ? { upTo: r, refused: last.get(batches[i]!.serverId) === i ? servers.get(batches[i]!.serverId)!.refused : 0 } : r));
  return { results: ingested, streams: rows.map((r) => r.id), announce: orgs };
}

/**
 * Takes each batch's events above its server's watermark (moving the watermark and `fresh`)
 * and sorts them by where they are stored; per batch, the seq to acknowledge, or why not.
 */
function sortEvents(batches: Batch[], servers: Map<string, ServerState>) {
  const results: (number | Error)[] = [];
  const stored: StoredEvent[] = [];
  const logs: AgentLogLine[] = [];
  const commandResults: { server: string; e: CommandResultEvent }[] = [];
  const stats = new Map<string, StatsEvent>();
  for (const batch of batches) {
    const server = servers.get(batch.serverId);
    if (!server) {
      results.push(new UnknownServerError(batch.serverId));
      continue;
    }
    for (const e of batch.events) {
      if (e.seq <= server.watermark) continue;
      server.watermark = e.seq;
      server.moved = true;
      server.fresh.push(e);
      if (e.kind === "stats") stats.set(batch.serverId, e);
      else if (isDeploymentLog(e)) logs.push(logLine(batch.serverId, e));
      // A caught mail is kept in caught_mails alone (modules/mails): a second copy would double the largest events.
      else if (e.kind !== "mail.caught") stored.push({ server: batch.serverId, body: withoutNul(JSON.stringify(e)) });
      if (e.kind === "command.result") commandResults.push({ server: batch.serverId, e });
    }
    if (batch.through > server.watermark) {
      server.watermark = batch.through;
      server.moved = true;
    }
    results.push(server.watermark);
  }
  return { results, stored, logs, commandResults, stats };
}

/**
 * PostgreSQL stores no NUL character in text or jsonb, and a container may print one: such
 * an event would fail its batch on every resend and stall the agent's stream for good. It is
 * stored with U+FFFD in place of each NUL instead. Takes and returns JSON text.
 */
function withoutNul(json: string): string {
  return json.includes("\\u0000") ? json.replace(/(?<!\\)((?:\\\\)*)\\u0000/g, "$1\\ufffd") : json;
}

/** A log line for deployment_logs, stored only if its deployment is the sender's (see storeDeploymentLogs). */
function logLine(serverId: string, e: LogEvent & { deployment_id: string }): AgentLogLine {
  const message = e.message.includes("\0") ? e.message.replaceAll("\0", "\ufffd") : e.message;
  return { serverId, deploymentId: e.deployment_id, ts: e.ts, level: e.level, message, step: e.step, data: e.data ? withoutNul(JSON.stringify(e.data)) : null };
}

function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : withoutNul(JSON.stringify(value));
}

/** The latest figures per server (one row each), and a server.stats live event for dashboards and their charts. */
async function storeStats(client: pg.PoolClient, latest: { serverId: string; organizationId: string; s: StatsEvent }[]) {
  if (latest.length === 0) return;
  await upsertStats(client, latest);
  const events: OrgEvent[] = latest.map(({ serverId, organizationId, s }) => {
    const { kind: _kind, seq: _seq, ...figures } = s;
    return { organizationId, type: "server.stats", data: { server_id: serverId, ...figures } };
  });
  await appendOrgEvents(client, events, { announce: false });
}

/** A result completes only a command of the server that sent it; one naming another server's command is counted refused. */
async function storeResults(client: pg.PoolClient, results: { server: string; e: CommandResultEvent }[], servers: Map<string, ServerState>) {
  const own = await endCommands(
    client,
    results.map(({ server, e: r }) => ({
      serverId: server,
      commandId: r.command_id,
      state: r.ok ? "succeeded" : "failed",
      result: jsonOrNull(r.result),
      error: jsonOrNull(r.error),
      ts: r.ts,
    })),
  );
  own.forEach((isOwn, i) => {
    if (!isOwn) servers.get(results[i]!.server)!.refused++;
  });
}
