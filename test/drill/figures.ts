// The per-fault figures: everything the run left in the database and in the clients,
// attributed to the fault window in which it happened (by when the command, log line, request,
// operation or stream row was made), plus the agents-back times each window measured.
import { CLIENT_ACTIONS } from "./api-clients.ts";
import type { FaultWindow } from "./faults.ts";
import { positionsOf, TERMINAL_COMMAND_STATES, TERMINAL_DEPLOYMENT_STATUSES, type Operation } from "./ledger.ts";
import type { World } from "./world.ts";

export interface FaultFigures {
  fault: string;
  affected: number;
  backP50S: number | null;
  backP99S: number | null;
  notBack: number;
  commandsIssued: number;
  commandsLost: number;
  commandsRunTwice: number;
  commandsRejected: number;
  eventsSent: number;
  eventsLost: number;
  eventsDuplicated: number;
  sseFrames: number;
  sseGaps: number;
  sseDuplicates: number;
  apiRequests: number;
  apiErrors: number;
  apiFixedByRetry: number;
  apiNotFixed: number;
  deploymentsNonTerminal: number;
  /** Replicas that exited in the window without being the fault's target. */
  replicasDied: number;
  notes: string[];
}

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function emptyFigures(fault: string): FaultFigures {
  return {
    fault,
    affected: 0,
    backP50S: null,
    backP99S: null,
    notBack: 0,
    commandsIssued: 0,
    commandsLost: 0,
    commandsRunTwice: 0,
    commandsRejected: 0,
    eventsSent: 0,
    eventsLost: 0,
    eventsDuplicated: 0,
    sseFrames: 0,
    sseGaps: 0,
    sseDuplicates: 0,
    apiRequests: 0,
    apiErrors: 0,
    apiFixedByRetry: 0,
    apiNotFixed: 0,
    deploymentsNonTerminal: 0,
    replicasDied: 0,
    notes: [],
  };
}

/** `operations`: every operation of the drill's organisations, simulated and real (read once by drill.ts). */
export async function computeFigures(w: World, trafficStart: number, windows: FaultWindow[], operations: Operation[]): Promise<FaultFigures[]> {
  const rows: FaultFigures[] = [emptyFigures("baseline"), ...windows.map((win) => emptyFigures(win.fault))];
  const starts = [trafficStart, ...windows.map((win) => win.startedAt)];
  const at = (t: number): FaultFigures => {
    let i = 0;
    while (i + 1 < starts.length && t >= starts[i + 1]!) i++;
    return rows[i]!;
  };
  windows.forEach((win, i) => {
    const r = rows[i + 1]!;
    r.affected = win.affected;
    r.backP50S = percentile(win.backS, 50);
    r.backP99S = percentile(win.backS, 99);
    r.notBack = win.notBack;
    r.replicasDied = win.replicasDied.length;
    r.notes.push(...win.notes);
  });

  // Commands: every one issued to an agent the figures count.
  const serverIds = w.agentServerIds();
  const commands = await w.ledger.commands(serverIds);
  const executions = new Map<string, number>();
  for (const { sim } of w.sims) for (const [id, n] of sim.executions) executions.set(id, n);
  const executedPerDeployment = new Map<string, number>();
  for (const c of commands) {
    const r = at(c.createdAt);
    r.commandsIssued++;
    if (!TERMINAL_COMMAND_STATES.includes(c.state)) r.commandsLost++;
    if (c.state === "rejected" || c.state === "expired") r.commandsRejected++;
    // A real agent that ran a command twice reports two results (two seqs); a simulated one counts its runs.
    if (c.results > 1 || (executions.get(c.commandId) ?? 0) > 1) r.commandsRunTwice++;
    if (c.deploymentId && (c.results > 0 || executions.has(c.commandId))) executedPerDeployment.set(c.deploymentId, (executedPerDeployment.get(c.deploymentId) ?? 0) + 1);
  }

  // Operations: terminal after the settle time; one operation run by two commands counts as
  // run twice, and so does one of the clients' kinds (restart, deploy) no client got a task id
  // for (a request whose answer was lost and whose same-key retry made another operation
  // instead of replaying the first). The control plane makes operations of its own too: a
  // newly deployed environment's default backup schedule (a minute between 00:00 and 05:59
  // UTC) takes scheduled backups, during a drill run in those hours.
  const known = new Set(w.clients.flatMap((c) => c.tasks));
  const CLIENT_KINDS = new Set<string>(CLIENT_ACTIONS);
  const clientOrgs = new Set(w.clients.map((c) => c.target.organizationId));
  for (const d of operations) {
    const r = at(d.createdAt);
    if (!TERMINAL_DEPLOYMENT_STATUSES.includes(d.status)) r.deploymentsNonTerminal++;
    if ((executedPerDeployment.get(d.id) ?? 0) > 1) r.commandsRunTwice++;
    if (clientOrgs.has(d.organizationId) && CLIENT_KINDS.has(d.kind) && !known.has(d.id)) {
      r.commandsRunTwice++;
      // The request that made it: the organisation's last one started before it.
      const client = w.clients.find((c) => c.target.organizationId === d.organizationId);
      const req = client?.requests.filter((q) => q.at <= d.createdAt).at(-1);
      const seen = req ? [...new Set(req.errors)].join(", ") : "no request found";
      r.notes.push(`operation ${d.id} (${d.kind}, ${d.status}) was made but no client got its task id; its request saw: ${seen}; it ended ${req?.outcome ?? "?"} with task ${req ? [...req.taskIds].join(",") || "none" : "?"}`);
    }
  }

  // Events of the simulated agents: numbered lines made vs rows stored.
  const stored = await w.ledger.storedLines(w.sims.map((e) => e.org.server_id));
  for (const { sim, org } of w.sims) {
    const got = stored.get(org.server_id)!;
    sim.lineTimes.forEach((t, i) => {
      const r = at(t);
      r.eventsSent++;
      const c = got.get(i + 1) ?? 0;
      if (c === 0) {
        r.eventsLost++;
        r.notes.push(`simulated agent ${org.server_id}: line ${i + 1} not stored (${sim.pending} events still unacknowledged)`);
      }
      if (c > 1) r.eventsDuplicated += c - 1;
    });
  }
  // The overflow agent: lines the journal dropped must be announced by its drop notice (the
  // notice's dropped_total, as stored); command results are never dropped (commands above).
  if (w.overflow) {
    const { sim, org } = w.overflow;
    const got = (await w.ledger.storedLines([org.server_id])).get(org.server_id)!;
    const { rows: notices } = await w.ledger.pool.query<{ total: number }>(
      `select coalesce(max((select sum(v::text::int) from jsonb_each(body->'data'->'dropped_total') as t(k, v))), 0)::int as total
         from agent_events where server_id = $1 and kind = 'log' and body->'data'->>'source' = 'journal'`,
      [org.server_id],
    );
    const announced = notices[0]?.total ?? 0;
    let missing = 0;
    let firstMissingAt = 0;
    sim.lineTimes.forEach((t, i) => {
      const c = got.get(i + 1) ?? 0;
      at(t).eventsSent++;
      if (c > 1) at(t).eventsDuplicated += c - 1;
      if (c === 0 && missing++ === 0) firstMissingAt = t;
    });
    const unannounced = missing - announced;
    if (unannounced > 0) at(firstMissingAt).eventsLost += unannounced;
    // The journal's order: debug lines go before any info line does.
    const missingOf = (level: string) => sim.lineLevels.filter((l, i) => l === level && !got.has(i + 1)).length;
    const storedDebug = sim.lineLevels.filter((l, i) => l === "debug" && got.has(i + 1)).length;
    const order = missingOf("info") > 0 && storedDebug > 0 ? `; ${storedDebug} debug lines were kept while info lines were dropped (the journal promises debug first)` : "";
    if (missing > 0 || announced > 0) {
      at(firstMissingAt || Date.now()).notes.push(
        `overflow agent: ${missing} lines not stored (${missingOf("debug")} debug, ${missingOf("info")} info), the stored drop notice announces ${announced} dropped; ${sim.pending} events still pending${order}`,
      );
    }
  }

  // The real agents: stats and deployment log lines are not stored per seq, so their events are
  // judged by what is left in their journals once the settle time is over (all acknowledged).
  for (const { agent } of w.reals) {
    const status = await agent.status().catch(() => null);
    if (status && status.pendingCount > 0) rows[rows.length - 1]!.notes.push(`real agent ${agent.name}: ${status.pendingCount} events still unacknowledged in its journal`);
  }

  // SSE: the rows each subscriber's frames name vs the rows stored since its first frame.
  for (const sub of w.subscribers) {
    if (sub.frames.length === 0) continue;
    const seen = new Map<string, number>();
    for (const f of sub.frames) {
      const p = positionsOf(f.id);
      if (!p) continue;
      const key = f.event === "deployment.log" ? `l:${p.log}` : `e:${p.ev}`;
      if (seen.has(key)) at(f.at).sseDuplicates++;
      else seen.set(key, f.at);
      at(f.at).sseFrames++;
    }
    const first = positionsOf(sub.frames[0]!.id)!;
    const split = (s: string): [bigint, bigint] => {
      const [a, b] = s.split(".");
      return [BigInt(a!), BigInt(b!)];
    };
    const expected = await w.ledger.streamRows(sub.organizationId, { log: split(first.log), ev: split(first.ev) });
    // The first frame's position in the other table was already behind it.
    expected.delete(sub.frames[0]!.event === "deployment.log" ? `e:${first.ev}` : `l:${first.log}`);
    for (const [key, t] of expected) if (!seen.has(key)) at(t).sseGaps++;
  }

  // API requests: errors, and whether the retry with the same key fixed them.
  const errorKinds = new Map<FaultFigures, Map<string, number>>();
  for (const c of w.clients) {
    for (const req of c.requests) {
      const r = at(req.at);
      r.apiRequests++;
      if (req.taskIds.size > 1) r.commandsRunTwice++;
      if (req.errors.length === 0) continue;
      r.apiErrors += req.errors.length;
      const kinds = errorKinds.get(r) ?? new Map<string, number>();
      for (const e of req.errors) kinds.set(e, (kinds.get(e) ?? 0) + 1);
      errorKinds.set(r, kinds);
      if (req.outcome === "failed") r.apiNotFixed++;
      else r.apiFixedByRetry++;
    }
  }
  for (const [r, kinds] of errorKinds) r.notes.push(`API errors: ${[...kinds].map(([k, n]) => `${k} x${n}`).join(", ")}`);
  return rows;
}
