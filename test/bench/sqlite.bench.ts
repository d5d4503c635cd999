// `npm run bench:sqlite`: the agent's journal (apps/agent/src/journal) on node:sqlite, which the
// agent runs on, and on better-sqlite3, the binding it ran on before, in the same run. The
// journal code is the same for both (openJournal's `driver` option); only the binding differs.
//
// Phases, each on a fresh journal file in a temp directory (the journal's own pragmas: WAL,
// synchronous NORMAL, FULL for command writes):
//   append       one log line per call, as the event outbox writes them (a transaction each)
//   append_batch appendMany of BENCH_BATCH lines (one transaction)
//   pending      reading the backlog back in batches of 500, as the event sender does
//   ack          acknowledging it 500 at a time (the delete of acknowledged events)
//   retention    appending into a journal held at its cap (20 000 events): drops and drop notices
//   commands     accept, mark running, finish with its result event (fsynced commits)
// Rounds alternate which binding goes first; each figure is the median of BENCH_ROUNDS.
//
// Environment: BENCH_ROUNDS (5), BENCH_EVENTS (20000, per phase), BENCH_BATCH (100),
// BENCH_COMMANDS (300), BENCH_MESSAGE_BYTES (120), BENCH_PHASES (all; e.g. pending,ack).
// Prints a table and, as the very last line, one JSON object (units in the key names).
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openJournal } from "../../apps/agent/src/journal/journal.ts";
import { nodeSqliteDriver, type SqliteConnection, type SqliteDriver } from "../../apps/agent/src/journal/database.ts";
import type { EventInput, Journal, JournalOptions } from "../../apps/agent/src/journal/journal-types.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const ROUNDS = Math.max(1, Math.floor(setting("BENCH_ROUNDS", 5)));
const EVENTS = Math.max(1000, Math.floor(setting("BENCH_EVENTS", 20_000)));
const BATCH = Math.max(1, Math.floor(setting("BENCH_BATCH", 100)));
const COMMANDS = Math.max(10, Math.floor(setting("BENCH_COMMANDS", 300)));
const MESSAGE_BYTES = Math.max(1, Math.floor(setting("BENCH_MESSAGE_BYTES", 120)));
const CAP = 20_000;

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const requireFromRoot = createRequire(path.join(repoRoot, "package.json"));

const betterSqlite3Driver: SqliteDriver = (() => {
  const Database = requireFromRoot("better-sqlite3") as new (file: string) => SqliteConnection;
  return { name: "better-sqlite3", open: (file: string) => new Database(file) };
})();

const DRIVERS = [
  { key: "node_sqlite", driver: nodeSqliteDriver },
  { key: "better_sqlite3", driver: betterSqlite3Driver },
] as const;
type DriverKey = (typeof DRIVERS)[number]["key"];

const message = "x".repeat(MESSAGE_BYTES);
const LEVELS = ["debug", "info", "info", "info", "warning", "error"] as const;
// Shaped as the agent's log event body (protocol's log event: command, deployment, step, message).
function logLine(i: number): EventInput {
  return {
    kind: "log",
    level: LEVELS[i % LEVELS.length],
    body: { command_id: "0b7c5d3e-2f7a-4c1e-9f0a-6a1b2c3d4e5f", deployment_id: "dep_123", step: "odoo.start", message: `${i} ${message}` },
  };
}

interface Phase {
  name: string;
  unit: "rows" | "commands";
  /** Runs the phase on a fresh journal; returns how many units it did. Timed from the call. */
  setup?: (journal: Journal) => void;
  run: (journal: Journal) => number;
  options?: Partial<JournalOptions>;
}

const ALL_PHASES: Phase[] = [
  {
    name: "append",
    unit: "rows",
    run(journal) {
      for (let i = 0; i < EVENTS; i++) journal.append(logLine(i));
      return EVENTS;
    },
  },
  {
    name: "append_batch",
    unit: "rows",
    run(journal) {
      for (let i = 0; i < EVENTS; i += BATCH) {
        journal.appendMany(Array.from({ length: Math.min(BATCH, EVENTS - i) }, (_, j) => logLine(i + j)));
      }
      return EVENTS;
    },
  },
  {
    name: "pending",
    unit: "rows",
    setup: (journal) => fill(journal, EVENTS),
    run(journal) {
      let cursor = 0;
      let read = 0;
      for (;;) {
        const rows = journal.pending(cursor, 500);
        if (rows.length === 0) return read;
        read += rows.length;
        cursor = rows[rows.length - 1]!.seq;
      }
    },
  },
  {
    name: "ack",
    unit: "rows",
    setup: (journal) => fill(journal, EVENTS),
    run(journal) {
      let deleted = 0;
      for (let upTo = 500; deleted < EVENTS; upTo += 500) deleted += journal.ack(upTo).deleted;
      return deleted;
    },
  },
  {
    name: "retention",
    unit: "rows",
    options: { maxPendingEvents: CAP },
    setup: (journal) => fill(journal, CAP),
    run(journal) {
      for (let i = 0; i < EVENTS; i++) journal.append(logLine(i));
      if (journal.stats().droppedTotal === 0) throw new Error("retention phase dropped nothing");
      return EVENTS;
    },
  },
  {
    name: "commands",
    unit: "commands",
    run(journal) {
      for (let i = 1; i <= COMMANDS; i++) {
        const commandId = `cmd-${i}`;
        journal.acceptCommand({ commandId, seq: i, type: "diagnostics", command: { command_id: commandId, seq: i, type: "diagnostics", params: {} } });
        journal.markCommandRunning(commandId);
        journal.finishCommand({ commandId, result: { ok: true }, event: { kind: "command.result", body: { command_id: commandId, ok: true } } });
      }
      return COMMANDS;
    },
  },
];

// BENCH_PHASES=pending,ack runs only those (the lifecycle figure needs append, pending and ack).
const PHASES = ((only) => (only ? ALL_PHASES.filter((p) => only.split(",").includes(p.name)) : ALL_PHASES))(process.env.BENCH_PHASES);
if (PHASES.length === 0) throw new Error(`BENCH_PHASES names none of ${ALL_PHASES.map((p) => p.name).join(", ")}`);

function fill(journal: Journal, count: number): void {
  for (let i = 0; i < count; i += 500) journal.appendMany(Array.from({ length: Math.min(500, count - i) }, (_, j) => logLine(i + j)));
}

/** Units per second of wall time, and this process's CPU time per unit (user + system, µs). */
function runPhase(phase: Phase, driver: SqliteDriver): { perS: number; cpuUs: number } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-bench-sqlite-"));
  const journal = openJournal({ path: path.join(dir, "journal.db"), driver, ...phase.options });
  try {
    phase.setup?.(journal);
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    const units = phase.run(journal);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const used = process.cpuUsage(cpu);
    return { perS: units / seconds, cpuUs: (used.user + used.system) / units };
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function main(): void {
  const load = os.loadavg();
  const out = (line = "") => process.stdout.write(`${line}\n`);
  const sqliteVersion = (driver: SqliteDriver) => {
    const db = driver.open(":memory:");
    try {
      return (db.prepare("select sqlite_version() as v").get() as { v: string }).v;
    } finally {
      db.close();
    }
  };
  out(`bench:sqlite on Node ${process.version}, ${os.cpus().length} CPUs, load ${load.map((l) => l.toFixed(2)).join(" ")}`);
  out(`node:sqlite (SQLite ${sqliteVersion(nodeSqliteDriver)}) vs better-sqlite3 ${requireFromRoot("better-sqlite3/package.json").version} (SQLite ${sqliteVersion(betterSqlite3Driver)})`);
  out(`${ROUNDS} rounds, ${EVENTS} events per phase, batches of ${BATCH}, ${COMMANDS} commands, ${MESSAGE_BYTES}-byte messages`);
  out();

  const samples = new Map<string, number[]>();
  const cpuSamples = new Map<string, number[]>();
  // A warm-up round, not counted: the first files, JIT, page cache.
  for (const { driver } of DRIVERS) for (const phase of PHASES) runPhase(phase, driver);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? DRIVERS : [...DRIVERS].reverse();
    for (const phase of PHASES) {
      for (const { key, driver } of order) {
        const id = `${phase.name}/${key}`;
        const result = runPhase(phase, driver);
        samples.set(id, [...(samples.get(id) ?? []), result.perS]);
        cpuSamples.set(id, [...(cpuSamples.get(id) ?? []), result.cpuUs]);
      }
    }
  }

  const figure = (phase: Phase, key: DriverKey) => median(samples.get(`${phase.name}/${key}`) ?? []);
  const cpuFigure = (phase: Phase, key: DriverKey) => median(cpuSamples.get(`${phase.name}/${key}`) ?? []);
  const spread = (phase: Phase, key: DriverKey) => {
    const xs = samples.get(`${phase.name}/${key}`) ?? [];
    const m = median(xs);
    return m > 0 ? ((Math.max(...xs) - Math.min(...xs)) / m) * 100 : 0;
  };
  const pad = (s: string, n: number) => s.padStart(n);
  out(
    `${"phase".padEnd(14)}${pad("node:sqlite /s", 16)}${pad("±%", 6)}${pad("better-sqlite3 /s", 19)}${pad("±%", 6)}${pad("node/better", 13)}` +
      `${pad("CPU µs/unit node", 18)}${pad("better", 8)}`,
  );
  const json: Record<string, number> = {};
  const ratios: number[] = [];
  for (const phase of PHASES) {
    const node = figure(phase, "node_sqlite");
    const better = figure(phase, "better_sqlite3");
    const ratio = node / better;
    ratios.push(ratio);
    out(
      `${phase.name.padEnd(14)}${pad(Math.round(node).toLocaleString("en"), 16)}${pad(spread(phase, "node_sqlite").toFixed(0), 6)}` +
        `${pad(Math.round(better).toLocaleString("en"), 19)}${pad(spread(phase, "better_sqlite3").toFixed(0), 6)}${pad(ratio.toFixed(3), 13)}` +
        `${pad(cpuFigure(phase, "node_sqlite").toFixed(1), 18)}${pad(cpuFigure(phase, "better_sqlite3").toFixed(1), 8)}`,
    );
    json[`${phase.name}_node_sqlite_${phase.unit}_per_s`] = Math.round(node);
    json[`${phase.name}_better_sqlite3_${phase.unit}_per_s`] = Math.round(better);
    json[`${phase.name}_ratio_node_over_better`] = Number(ratio.toFixed(3));
    const one = phase.unit === "rows" ? "row" : "command";
    json[`${phase.name}_node_sqlite_cpu_us_per_${one}`] = Number(cpuFigure(phase, "node_sqlite").toFixed(2));
    json[`${phase.name}_better_sqlite3_cpu_us_per_${one}`] = Number(cpuFigure(phase, "better_sqlite3").toFixed(2));
  }
  // What one event costs the agent's CPU on its way through the journal: appended, read to
  // send, acknowledged (I/O waits excluded; they are the same file and pragmas for both).
  const lifecycle = (key: DriverKey) =>
    ["append", "pending", "ack"].reduce((sum, name) => {
      const phase = PHASES.find((p) => p.name === name);
      return phase === undefined ? Number.NaN : sum + cpuFigure(phase, key);
    }, 0);
  const lifecycleNode = lifecycle("node_sqlite");
  const lifecycleBetter = lifecycle("better_sqlite3");
  json.event_lifecycle_node_sqlite_cpu_us_per_event = Number(lifecycleNode.toFixed(2));
  json.event_lifecycle_better_sqlite3_cpu_us_per_event = Number(lifecycleBetter.toFixed(2));
  json.event_lifecycle_cpu_ratio_node_over_better = Number((lifecycleNode / lifecycleBetter).toFixed(3));
  // One figure across phases: the geometric mean of the ratios, so no phase weighs by its speed.
  const overall = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length);
  out();
  out(`overall (geometric mean of the ratios): node:sqlite/better-sqlite3 = ${overall.toFixed(3)}; ±% is the spread (max-min)/median of the rounds;`);
  out("CPU µs/unit is this process's user+system time per row or command (I/O waits excluded)");
  out(
    `one event appended, read and acknowledged: ${lifecycleNode.toFixed(1)} µs CPU on node:sqlite, ${lifecycleBetter.toFixed(1)} µs on better-sqlite3 ` +
      `(node/better ${(lifecycleNode / lifecycleBetter).toFixed(3)}, below 1: node:sqlite uses less)`,
  );
  out(`load after: ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  json.ratio_node_over_better = Number(overall.toFixed(3));
  json.load_avg_1m_start = Number(load[0]!.toFixed(2));
  out(JSON.stringify(json));
}

main();
