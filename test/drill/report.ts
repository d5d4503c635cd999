// The drill's output: one row per fault window, the goals and whether each is met, and the
// last line, one JSON object of every figure with units in its keys.
import type { FaultFigures } from "./figures.ts";

export const AGENTS_BACK_P99_GOAL_S = 10;

export interface Goal {
  name: string;
  met: boolean;
  detail: string;
  /** A loss, duplicate, gap, open operation, unfixed error, rejected command or agent not back: fails the run (exit 1, the CI test). */
  gate: boolean;
}

const sum = (rows: FaultFigures[], k: keyof FaultFigures) => rows.reduce((n, r) => n + (r[k] as number), 0);

export function judge(rows: FaultFigures[]): Goal[] {
  const goals: Goal[] = [];
  for (const fault of ["kill9", "sigterm"]) {
    const r = rows.find((x) => x.fault === fault);
    if (!r) continue;
    const ok = r.notBack === 0 && (r.backP99S ?? 0) <= AGENTS_BACK_P99_GOAL_S;
    goals.push({ name: `${fault}: agents back p99 <= ${AGENTS_BACK_P99_GOAL_S} s`, met: ok, detail: `p99 ${r.backP99S ?? "-"} s, ${r.notBack} not back of ${r.affected}`, gate: false });
  }
  const skew = rows.find((x) => x.fault === "clock_skew");
  // The agent judges commands by the control plane's time (agent clock.ts), so a clock minutes off rejects none.
  if (skew) goals.push({ name: "clock_skew: the skewed agent's commands verify", met: skew.commandsRejected === 0, detail: `${skew.commandsRejected} rejected`, gate: true });
  const notBack = sum(rows, "notBack");
  goals.push({ name: "every agent back after every fault", met: notBack === 0, detail: `${notBack} not back within the window`, gate: true });
  for (const [k, label] of [
    ["commandsLost", "0 commands lost"],
    ["commandsRunTwice", "0 commands run twice"],
    ["eventsLost", "0 events lost"],
    ["eventsDuplicated", "0 events duplicated in storage"],
    ["sseGaps", "0 SSE gaps"],
    ["sseDuplicates", "0 SSE duplicates"],
    ["deploymentsNonTerminal", "0 deployments non-terminal after the settle time"],
    ["apiNotFixed", "every API error fixed by a retry with the same key"],
    ["replicasDied", "no replica exits unless it is the fault's target"],
  ] as const) {
    const n = sum(rows, k);
    goals.push({ name: label, met: n === 0, detail: String(n), gate: true });
  }
  return goals;
}

function cell(v: number | null): string {
  return v === null ? "-" : String(Math.round(v * 100) / 100);
}

export function table(rows: FaultFigures[]): string {
  const cols: [string, (r: FaultFigures) => string][] = [
    ["window", (r) => r.fault],
    ["affected", (r) => String(r.affected)],
    ["back p50 s", (r) => cell(r.backP50S)],
    ["back p99 s", (r) => cell(r.backP99S)],
    ["not back", (r) => String(r.notBack)],
    ["cmds", (r) => String(r.commandsIssued)],
    ["lost", (r) => String(r.commandsLost)],
    ["twice", (r) => String(r.commandsRunTwice)],
    ["rejected", (r) => String(r.commandsRejected)],
    ["events", (r) => String(r.eventsSent)],
    ["ev lost", (r) => String(r.eventsLost)],
    ["ev dup", (r) => String(r.eventsDuplicated)],
    ["sse", (r) => String(r.sseFrames)],
    ["gaps", (r) => String(r.sseGaps)],
    ["sse dup", (r) => String(r.sseDuplicates)],
    ["api", (r) => String(r.apiRequests)],
    ["api err", (r) => String(r.apiErrors)],
    ["fixed", (r) => String(r.apiFixedByRetry)],
    ["not fixed", (r) => String(r.apiNotFixed)],
    ["open ops", (r) => String(r.deploymentsNonTerminal)],
    ["died", (r) => String(r.replicasDied)],
  ];
  const cells = [cols.map(([h]) => h), ...rows.map((r) => cols.map(([, f]) => f(r)))];
  const widths = cols.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells.map((row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
}

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export function figuresJson(rows: FaultFigures[], goals: Goal[], extra: Record<string, number | string | boolean>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extra };
  for (const r of rows) {
    for (const [k, v] of Object.entries(r)) {
      if (k === "fault" || k === "notes") continue;
      const unit = k.endsWith("S") ? `${snake(k.slice(0, -1))}_s` : snake(k);
      out[`${r.fault}_${unit}`] = v;
    }
  }
  out.gates_met = goals.every((g) => g.met || !g.gate);
  out.goals_met = goals.every((g) => g.met);
  out.goals_failed = goals.filter((g) => !g.met).map((g) => g.name);
  return out;
}
