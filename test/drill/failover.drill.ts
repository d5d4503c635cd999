// npm run drill:failover: three control-plane replicas behind HAProxy, real and simulated
// agents, API clients and SSE subscribers, and a fault schedule (see apps/control-plane/docs/testing.md, Failover drill).
// Prints a table per fault window and the goals, then ONE JSON line of the figures. Exits 1
// when a loss, duplicate, gap, stuck operation, unfixed API error, command rejected for a
// skewed clock, failed real Docker deploy or agent-not-back goal fails (the p99s are figures,
// reported but not gating).
// Settings: DRILL_FAULTS (comma-separated, default all), DRILL_SIMS, DRILL_REAL_AGENTS,
// DRILL_CUT_S, DRILL_PG_DOWN_S, DRILL_WINDOW_S, DRILL_SETTLE_S, DRILL_SKEW_S,
// DRILL_JOURNAL_BOUND, DRILL_API_RATE, DRILL_LOG_DIR (test/drill/settings.ts).
import os from "node:os";
import { runDrill } from "./drill.ts";
import { figuresJson, table } from "./report.ts";
import { drillSettingsFromEnv } from "./settings.ts";

const settings = drillSettingsFromEnv();
const log = (line: string) => process.stderr.write(`drill: ${line}\n`);
const load = () => os.loadavg().map((n) => n.toFixed(2)).join(" ");
log(`settings ${JSON.stringify(settings)}; load ${load()} on ${os.cpus().length} cores`);
const result = await runDrill(settings, log);
console.log(table(result.rows));
console.log("");
for (const r of result.rows) for (const n of r.notes) console.log(`${r.fault}: ${n}`);
console.log("");
for (const g of result.goals) console.log(`${g.met ? "met    " : "NOT MET"}  ${g.name} (${g.detail})${g.gate ? "" : " [figure, does not fail the run]"}`);
console.log(`logs of the replicas, HAProxy and the real agents: ${result.logDir}; load at the end ${load()}`);
console.log(
  JSON.stringify(
    figuresJson(result.rows, result.goals, {
      duration_s: result.durationS,
      sims: settings.sims,
      real_agents: settings.realAgents,
      cut_s: settings.cutS,
      window_s: settings.windowS,
      drill_issue_failures: result.drillIssueFailures,
      real_deploys_completed: result.realOperations.deploysCompleted,
      real_restarts_completed: result.realOperations.restartsCompleted,
      real_operations_failed: result.realOperations.failed.length,
      load_1m: os.loadavg()[0]!,
    }),
  ),
);
process.exit(result.goals.every((g) => g.met || !g.gate) ? 0 : 1);
