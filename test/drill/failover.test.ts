// The failover drill, shortened for CI: every fault once with short windows, a handful of
// simulated agents and one real agent of each kind. It fails on any lost or twice-run
// command, command rejected for a skewed clock, lost or duplicated event, SSE gap or
// duplicate, operation left open, API error a retry with the same key did not fix, real
// agent's Docker deploy or restart that failed, or agent not back within its window. How fast the
// agents come back is the full drill's figure (npm run drill:failover), not asserted here.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runDrill } from "./drill.ts";
import { table } from "./report.ts";
import { ALL_FAULTS, type DrillSettings } from "./settings.ts";

const SHORT: DrillSettings = {
  sims: 6,
  realAgents: 1,
  cutS: 6,
  pgDownS: 3,
  windowS: 10,
  settleS: 8,
  skewS: -600,
  journalBound: 200,
  drainSettleMs: 1500,
  drainHandoverMs: 3000,
  apiRatePerS: 2,
  faults: [...ALL_FAULTS],
  logDir: null,
};

describe("failover drill (one of each fault, short windows)", () => {
  it("loses, duplicates and leaves open nothing, and every agent comes back", { timeout: 360_000 }, async () => {
    const lines: string[] = [];
    const result = await runDrill(SHORT, (l) => lines.push(l));
    const figures = table(result.rows);
    const failed = result.goals.filter((g) => g.gate && !g.met);
    // CI keeps nothing but this message: on a failure it carries the logs' tails too.
    const tails = failed.length > 0 ? logTails(result.logDir) : "";
    expect(failed, `logs: ${result.logDir}\n${figures}\n${result.rows.flatMap((r) => r.notes.map((n) => `${r.fault}: ${n}`)).join("\n")}\n${lines.join("\n")}\n${tails}`).toEqual([]);
    // Each fault really happened and knocked agents off (a PostgreSQL restart need not: links may survive it).
    for (const fault of SHORT.faults.filter((f) => f !== "pg_restart")) expect(result.rows.find((r) => r.fault === fault)?.affected, fault).toBeGreaterThan(0);
    expect(result.rows.find((r) => r.fault === "pg_restart")?.notes.join(" ")).toMatch(/PostgreSQL down/);
    // The logs of the replicas, HAProxy and the agents are kept only when the drill failed.
    rmSync(result.logDir, { recursive: true, force: true });
  });
});

/** The last lines of each real agent's log, and the replicas' last warnings and errors (pino level >= 40). */
function logTails(dir: string): string {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith(".log")) continue;
    const all = readFileSync(path.join(dir, name), "utf8").split("\n").filter(Boolean);
    const picked = name.startsWith("replica-") ? all.filter((l) => /"level":(4|5|6)0/.test(l)) : name.startsWith("agent-") ? all : [];
    if (picked.length > 0) out.push(`--- ${name} (last ${Math.min(25, picked.length)} of ${picked.length})`, ...picked.slice(-25).map((l) => l.slice(0, 400)));
  }
  return out.join("\n");
}
