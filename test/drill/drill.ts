// One run of the failover drill: stand the world up, let traffic run for a baseline window,
// run each fault in its own window with traffic still running, let in-flight work finish,
// stop the traffic, read the ledger and judge the goals. The world is torn down whatever
// happened (the network namespace, the replicas, HAProxy, PostgreSQL, the agents' state).
import { runFault, type FaultWindow } from "./faults.ts";
import { computeFigures, type FaultFigures } from "./figures.ts";
import { judge, type Goal } from "./report.ts";
import type { Operation } from "./ledger.ts";
import type { DrillSettings } from "./settings.ts";
import { buildWorld, type World } from "./world.ts";

export interface DrillResult {
  rows: FaultFigures[];
  goals: Goal[];
  windows: FaultWindow[];
  logDir: string;
  /** Issue calls of the drill's own that failed (PostgreSQL down), not product errors. */
  drillIssueFailures: number;
  /** The host agents' Docker deploys and restarts, which ran through the faults. */
  realOperations: RealOperations;
  durationS: number;
}

export interface RealOperations {
  deploysCompleted: number;
  restartsCompleted: number;
  /** Operations that did not complete, with their error. */
  failed: string[];
}

/** What the host agents ran in Docker for their API clients, of all the drill's operations. */
function realOperationsOf(w: World, operations: Operation[]): RealOperations {
  const hosts = new Set(w.reals.filter((r) => r.role === "host").map((r) => r.org.organization_id));
  const ops = operations.filter((o) => hosts.has(o.organizationId));
  const completed = (kind: string) => ops.filter((o) => o.kind === kind && o.status === "success").length;
  return {
    deploysCompleted: completed("deploy"),
    restartsCompleted: completed("restart"),
    failed: ops.filter((o) => o.status !== "success").map((o) => `${o.kind} ${o.id} ${o.status}: ${o.error ?? "no error message"}`),
  };
}

/** A replica dying, draining or losing PostgreSQL mid-deploy must not fail the customer's deploy. */
function realOperationsGoal(r: RealOperations): Goal {
  return {
    name: "the real agents' Docker deploys and restarts all completed (at least one deploy)",
    met: r.failed.length === 0 && r.deploysCompleted > 0,
    detail: `${r.deploysCompleted} deploys and ${r.restartsCompleted} restarts completed; ${r.failed.length} not${r.failed.length ? `: ${r.failed.join("; ")}` : ""}`,
    gate: true,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long after a fault's window the drill waits for every agent to be connected before the next fault. */
const STEADY_WAIT_S = 30;

export async function runDrill(settings: DrillSettings, log: (line: string) => void): Promise<DrillResult> {
  const t0 = Date.now();
  const w = await buildWorld(settings, log);
  try {
    const trafficStart = Date.now();
    // Work for the real agents: a diagnostics command each every 3 s.
    let issuing = true;
    const issuer = (async () => {
      while (issuing) {
        await Promise.all(w.reals.filter((r) => r.agent.running).map((r) => w.issueDiagnostics(r.org.server_id, r.org.organization_id)));
        await sleep(3000);
      }
    })();
    log(`baseline: ${settings.windowS} s of traffic`);
    await sleep(settings.windowS * 1000);
    const windows: FaultWindow[] = [];
    for (const fault of settings.faults) {
      log(`fault: ${fault}`);
      const win = await runFault(w, fault);
      windows.push(win);
      // The next fault starts on a whole fleet: an agent still away is this window's, not the next one's.
      const away = await w.away(STEADY_WAIT_S * 1000);
      if (away.length > 0) {
        win.notBack += away.length;
        win.notes.push(`${away.length} agent(s) still not connected ${STEADY_WAIT_S} s after the window: ${away.map((id) => w.serverRole(id)).join(", ")}`);
      }
      log(`  ${win.affected} affected, back: ${win.backS.length}, not back: ${win.notBack}; ${win.notes.join("; ")}`);
    }
    issuing = false;
    await issuer;
    log(`settling: ${settings.settleS} s for in-flight work, then stopping the clients`);
    await sleep(settings.settleS * 1000);
    await w.stopTraffic();
    // The agents' last events and the streams' last frames.
    for (const { sim } of w.sims) sim.quiet();
    await sleep(5000);
    await Promise.all(w.subscribers.map((s) => s.stop()));
    // Every operation of the drill's organisations, read once for the figures and the real agents' goal.
    const operations = await w.ledger.deployments([...w.sims, ...w.reals].map((e) => e.org.organization_id));
    const rows = await computeFigures(w, trafficStart, windows, operations);
    const realOperations = realOperationsOf(w, operations);
    return {
      rows,
      goals: [...judge(rows), realOperationsGoal(realOperations)],
      windows,
      logDir: w.logDir,
      drillIssueFailures: w.issueFailures,
      realOperations,
      durationS: Math.round((Date.now() - t0) / 1000),
    };
  } finally {
    await w.teardown();
  }
}
