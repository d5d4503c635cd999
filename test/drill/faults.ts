// The faults, each in its own window while traffic keeps running, and how long the agents it
// knocked off took to be connected again, read from the control plane's agent_sessions (a
// new connection id for the server = its agent is back).
import type { Session } from "./ledger.ts";
import type { FaultName } from "./settings.ts";
import type { World } from "./world.ts";

export interface FaultWindow {
  fault: FaultName;
  startedAt: number;
  endedAt: number;
  /** Agents the fault disconnected (or cut). */
  affected: number;
  /** Seconds from the fault (or the link's restore) until each affected agent was connected again. */
  backS: number[];
  notBack: number;
  /** Replicas that had exited by the end of the window (and were started again). */
  replicasDied: number[];
  notes: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls sessions until every affected agent has a new connection (not on `notOn`) or the deadline. */
async function awaitBack(w: World, affected: Map<string, string>, from: number, deadline: number, notOn?: string): Promise<{ backS: number[]; notBack: number }> {
  const back = new Map<string, number>();
  while (back.size < affected.size && Date.now() < deadline) {
    let s: Map<string, Session>;
    try {
      s = await w.ledger.sessions();
    } catch {
      await sleep(250);
      continue;
    }
    for (const [id, conn] of affected) {
      if (back.has(id)) continue;
      const now = s.get(id);
      if (now && now.connectionId !== conn && now.replicaId !== notOn) back.set(id, Math.max(0, now.connectedAt - from) / 1000);
    }
    await sleep(250);
  }
  return { backS: [...back.values()], notBack: affected.size - back.size };
}

async function replicaIdOf(w: World, index: number): Promise<string | null> {
  const s = await w.ledger.sessions();
  return s.get(w.probes[index]!.serverId)?.replicaId ?? null;
}

/** The replica holding the most agents (the probes aside): the one whose loss shows most. */
async function busiestReplica(w: World): Promise<number> {
  const s = await w.ledger.sessions();
  const probeIds = new Set(w.probes.map((p) => p.serverId));
  let best = 0;
  let most = -1;
  for (let i = 0; i < w.replicas.length; i++) {
    const id = await replicaIdOf(w, i);
    const held = [...s].filter(([server, x]) => x.replicaId === id && !probeIds.has(server)).length;
    if (held > most) [best, most] = [i, held];
  }
  return best;
}

async function stopReplica(w: World, signal: NodeJS.Signals, win: FaultWindow): Promise<void> {
  const index = await busiestReplica(w);
  const victim = w.replicas[index]!;
  const replicaId = await replicaIdOf(w, index);
  if (!replicaId) throw new Error(`probe of replica ${index} holds no session`);
  const before = await w.ledger.sessions();
  const probeIds = new Set(w.probes.map((p) => p.serverId));
  const affected = new Map([...before].filter(([id, s]) => s.replicaId === replicaId && !probeIds.has(id)).map(([id, s]) => [id, s.connectionId]));
  win.affected = affected.size;
  win.startedAt = Date.now();
  const stopped = victim.stop(signal).then(() => (Date.now() - win.startedAt) / 1000);
  // A draining replica keeps its agents until it hands them over, after its settle and within its handover window.
  const drainMs = signal === "SIGTERM" ? w.settings.drainSettleMs + w.settings.drainHandoverMs : 0;
  const windowEnd = win.startedAt + drainMs + w.settings.windowS * 1000;
  const r = await awaitBack(w, affected, win.startedAt, windowEnd, replicaId);
  win.backS = r.backS;
  win.notBack = r.notBack;
  const stopS = await stopped;
  win.notes.push(`replica ${index} held ${affected.size} agents; it exited ${stopS.toFixed(1)} s after ${signal}`);
  await sleep(Math.max(0, windowEnd - Date.now()));
  await victim.start();
  // Its probe finds it again (after its backoff), so the next fault knows which replica is which.
  const probe = w.probes[index]!;
  const deadline = Date.now() + 30_000;
  while (!probe.connected && Date.now() < deadline) await sleep(250);
}

async function pgRestart(w: World, win: FaultWindow): Promise<void> {
  const ids = new Set(w.agentServerIds());
  const before = new Map([...(await w.ledger.sessions())].filter(([id]) => ids.has(id)).map(([id, s]) => [id, s.connectionId]));
  win.startedAt = Date.now();
  await w.pg.restart(w.settings.pgDownS * 1000);
  const backUpAt = Date.now();
  win.notes.push(`PostgreSQL down ${((backUpAt - win.startedAt) / 1000).toFixed(1)} s (fast shutdown, then start)`);
  // Which agents lost their link shows only afterwards: poll the whole window, which runs
  // from PostgreSQL's return (as a cut's runs from the link's).
  const deadline = backUpAt + w.settings.windowS * 1000;
  const back = new Map<string, number>();
  const lost = new Set<string>();
  while (Date.now() < deadline) {
    const s = await w.ledger.sessions().catch(() => null);
    if (s) {
      for (const [id, conn] of before) {
        const now = s.get(id);
        if (!now || now.connectionId !== conn) lost.add(id);
        if (now && now.connectionId !== conn && !back.has(id)) back.set(id, Math.max(0, now.connectedAt - win.startedAt) / 1000);
      }
    }
    await sleep(250);
  }
  win.affected = lost.size;
  win.backS = [...back.values()];
  win.notBack = [...lost].filter((id) => !back.has(id)).length;
}

async function netCut(w: World, win: FaultWindow): Promise<void> {
  const entry = w.reals.find((r) => r.role === "netns");
  if (!entry || !w.netns) throw new Error("net_cut needs the network namespace's agent");
  const id = entry.org.server_id;
  const conn = (await w.ledger.sessions()).get(id)?.connectionId ?? "";
  win.affected = 1;
  win.startedAt = Date.now();
  await w.netns.cut();
  // Work for it while it is away: it must run once it is back, and its results arrive once.
  await w.issueDiagnostics(id, entry.org.organization_id);
  await sleep(w.settings.cutS * 1000);
  await w.netns.restore();
  const restoredAt = Date.now();
  win.notes.push(`link of the namespace's agent cut for ${w.settings.cutS} s (veth down)`);
  // A cut shorter than the heartbeat timeout may leave the same connection alive: back is then the moment it is seen again.
  const deadline = restoredAt + w.settings.windowS * 1000;
  let backAt: number | null = null;
  while (Date.now() < deadline && backAt === null) {
    const s = await w.ledger.sessions().catch(() => null);
    const now = s?.get(id);
    if (now && now.connectionId !== conn) backAt = Math.max(restoredAt, now.connectedAt);
    else if (now && (await lastHeard(w, id)) > restoredAt) backAt = Date.now();
    await sleep(250);
  }
  win.backS = backAt === null ? [] : [(backAt - restoredAt) / 1000];
  win.notBack = backAt === null ? 1 : 0;
  await sleep(Math.max(0, deadline - Date.now()));
}

/** When the control plane last stored an event of this server (ms), 0 if never. */
async function lastHeard(w: World, serverId: string): Promise<number> {
  const { rows } = await w.ledger.pool.query<{ ms: string | null }>("select (extract(epoch from max(received_at)) * 1000)::bigint::text as ms from agent_events where server_id = $1", [serverId]);
  return Number(rows[0]?.ms ?? 0);
}

async function clockSkew(w: World, win: FaultWindow): Promise<void> {
  const entry = w.reals.find((r) => r.role === "skew");
  if (!entry) throw new Error("clock_skew needs the skewed agent");
  const id = entry.org.server_id;
  const conn = (await w.ledger.sessions()).get(id)?.connectionId ?? "";
  const skew = w.settings.skewS;
  win.affected = 1;
  await entry.agent.stop("SIGTERM");
  win.startedAt = Date.now();
  entry.agent.start({
    env: {
      LD_PRELOAD: "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
      FAKETIME: `${skew >= 0 ? "+" : ""}${skew}`,
      FAKETIME_DONT_FAKE_MONOTONIC: "1",
      FAKETIME_DONT_RESET: "1",
    },
  });
  win.notes.push(`real agent restarted with its clock ${skew >= 0 ? "+" : ""}${skew} s (libfaketime)`);
  const r = await awaitBack(w, new Map([[id, conn]]), win.startedAt, win.startedAt + w.settings.windowS * 1000);
  win.backS = r.backS;
  win.notBack = r.notBack;
  for (let i = 0; i < 3; i++) {
    await w.issueDiagnostics(id, entry.org.organization_id);
    await sleep(1000);
  }
  await sleep(Math.max(0, win.startedAt + w.settings.windowS * 1000 - Date.now()));
}

async function journalOverflow(w: World, win: FaultWindow): Promise<void> {
  const o = w.overflow;
  if (!o) throw new Error("journal_overflow needs its agent");
  const id = o.org.server_id;
  const conn = (await w.ledger.sessions()).get(id)?.connectionId ?? "";
  win.affected = 1;
  win.startedAt = Date.now();
  // Commands just before the cut: their results are journaled while the link is down.
  const before = o.sim.executions.size;
  for (let i = 0; i < 3; i++) await w.issueDiagnostics(id, o.org.organization_id);
  const deadline = Date.now() + 10_000;
  while (o.sim.executions.size < before + 3 && Date.now() < deadline) await sleep(20);
  o.sim.cutFor(w.settings.cutS * 1000);
  // Three times the bound of log lines while cut, debug and info alternating.
  const lines = w.settings.journalBound * 3;
  for (let i = 0; i < lines; i++) {
    o.sim.log(i % 2 === 0 ? "debug" : "info");
    if (i % 50 === 0) await sleep(10);
  }
  win.notes.push(
    `${lines} log lines made while the link was cut ${w.settings.cutS} s, journal bound ${w.settings.journalBound} events: the journal dropped ${o.journal.dropped()} (it counts them in a notice); ${o.sim.executions.size - before} command results journaled meanwhile`,
  );
  await sleep(Math.max(0, win.startedAt + w.settings.cutS * 1000 - Date.now()));
  const restoredAt = Date.now();
  const r = await awaitBack(w, new Map([[id, conn]]), restoredAt, restoredAt + w.settings.windowS * 1000);
  win.backS = r.backS;
  win.notBack = r.notBack;
  await sleep(Math.max(0, restoredAt + w.settings.windowS * 1000 - Date.now()));
}

export async function runFault(w: World, fault: FaultName): Promise<FaultWindow> {
  const win: FaultWindow = { fault, startedAt: Date.now(), endedAt: 0, affected: 0, backS: [], notBack: 0, replicasDied: [], notes: [] };
  switch (fault) {
    case "kill9":
      await stopReplica(w, "SIGKILL", win);
      break;
    case "sigterm":
      await stopReplica(w, "SIGTERM", win);
      break;
    case "pg_restart":
      await pgRestart(w, win);
      break;
    case "net_cut":
      await netCut(w, win);
      break;
    case "clock_skew":
      await clockSkew(w, win);
      break;
    case "journal_overflow":
      await journalOverflow(w, win);
      break;
  }
  win.replicasDied = await w.reviveReplicas();
  if (win.replicasDied.length) win.notes.push(`replica(s) ${win.replicasDied.join(", ")} had exited during the window and were started again`);
  win.endedAt = Date.now();
  return win;
}
