// The drill's knobs, read from the environment like the benchmarks' (DRILL_*), with the full
// schedule's values as defaults; the CI test passes a shortened set.
export type FaultName = "kill9" | "sigterm" | "pg_restart" | "net_cut" | "journal_overflow" | "clock_skew";

export const ALL_FAULTS: readonly FaultName[] = ["kill9", "sigterm", "pg_restart", "net_cut", "journal_overflow", "clock_skew"];

export interface DrillSettings {
  /** Simulated agents (one organisation each, driven by API clients). */
  sims: number;
  /** Real agent processes on the host, besides the one in the network namespace. */
  realAgents: number;
  /** Seconds the agent's link stays cut (net_cut and journal_overflow). */
  cutS: number;
  /** Seconds PostgreSQL stays down. */
  pgDownS: number;
  /** Seconds each fault's window lasts (traffic keeps running; agents must be back within it). */
  windowS: number;
  /** Seconds of quiet after the last window for in-flight work to finish before the ledger is read. */
  settleS: number;
  /** The skewed agent's clock offset in seconds (-600: 10 minutes behind the control plane). */
  skewS: number;
  /** The journal bound of the overflow fault's agent (pending events). */
  journalBound: number;
  /**
   * The replicas' drain (BERTH_DRAIN_SETTLE_MS, BERTH_DRAIN_HANDOVER_MS): HAProxy, checking
   * /readyz every 500 ms and failing a server after 2 checks, has noticed within the settle;
   * the handover window suits the drill's small fleet. A SIGTERM's agents are judged back
   * within settle + handover + the fault window.
   */
  drainSettleMs: number;
  drainHandoverMs: number;
  /** API requests each client starts a second (all clients together). */
  apiRatePerS: number;
  faults: FaultName[];
  /** Where logs of replicas, HAProxy and agents go (a temp folder unless set). */
  logDir: string | null;
}

function num(name: string, fallback: number, signed = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || (!signed && n < 0)) throw new Error(`${name} must be a ${signed ? "" : "non-negative "}number (got "${raw}")`);
  return n;
}

export function drillSettingsFromEnv(): DrillSettings {
  const faults = (process.env.DRILL_FAULTS ?? ALL_FAULTS.join(","))
    .split(",")
    .map((f) => f.trim())
    .filter(Boolean);
  const unknown = faults.filter((f) => !ALL_FAULTS.includes(f as FaultName));
  if (unknown.length) throw new Error(`DRILL_FAULTS: unknown fault(s) ${unknown.join(", ")}; known: ${ALL_FAULTS.join(", ")}`);
  return {
    sims: num("DRILL_SIMS", 40),
    realAgents: num("DRILL_REAL_AGENTS", 2),
    cutS: num("DRILL_CUT_S", 60),
    pgDownS: num("DRILL_PG_DOWN_S", 5),
    windowS: num("DRILL_WINDOW_S", 30),
    settleS: num("DRILL_SETTLE_S", 20),
    skewS: num("DRILL_SKEW_S", -600, true),
    journalBound: num("DRILL_JOURNAL_BOUND", 200),
    drainSettleMs: num("DRILL_DRAIN_SETTLE_MS", 1500),
    drainHandoverMs: num("DRILL_DRAIN_HANDOVER_MS", 3000),
    apiRatePerS: num("DRILL_API_RATE", 8),
    faults: faults as FaultName[],
    logDir: process.env.DRILL_LOG_DIR ?? null,
  };
}
