// One server under test, in its own process: `full` (the real control plane), `bare`, or
// `bare-auth` (bare plus the product's metering statement, for attribution only).
// Both are started by the same code with the same pool size, so only the stack differs.
// Talks to the benchmark over the IPC channel (see Command and Reply).
import type { AddressInfo } from "node:net";
import pg from "pg";
import { createDb } from "@berth/db";
import { buildApp } from "@berth/control-plane";
import { buildBareApp } from "./bare-app.ts";
import { cpuProfiler, createInstruments, type Stats } from "./instrument.ts";
import { BENCH_AGENT_LIMITS } from "./settings.ts";

export type Variant = "full" | "bare" | "bare-auth";

export type Command = { type: "close" } | { type: "profile-start" } | { type: "profile-stop"; file: string } | { type: "stats" };
export type Reply = { type: "ready"; port: number } | { type: "done"; of: Command["type"]; stats?: Stats };

// Environment, set by the benchmark: BENCH_DATABASE_URL, BENCH_POOL_MAX, BENCH_MASTER_KEY
// (base64, the one seeding used), and optionally BENCH_INSTRUMENT=1 (SQL and request
// timings) and BENCH_LOG_LEVEL (full stack only: log at that pino level to /dev/null;
// unset keeps buildApp's default of no logger).

const variant = process.argv[2] as Variant;
const url = process.env.BENCH_DATABASE_URL;
const poolMax = Number(process.env.BENCH_POOL_MAX);
const masterKey = Buffer.from(process.env.BENCH_MASTER_KEY ?? "", "base64");
if (!url || !Number.isInteger(poolMax) || masterKey.length !== 32 || !["full", "bare", "bare-auth"].includes(variant) || !process.send) {
  throw new Error("server-process.ts is started by server-child.ts (for api.bench.ts and events.bench.ts) (fork with IPC, BENCH_DATABASE_URL, BENCH_POOL_MAX, BENCH_MASTER_KEY, full|bare|bare-auth)");
}

const send = (reply: Reply): void => {
  process.send!(reply);
};
const instruments = process.env.BENCH_INSTRUMENT === "1" ? createInstruments() : undefined;
const profiler = cpuProfiler();

let close: () => Promise<void>;
let port: number;
if (variant === "full") {
  const database = createDb(url, { max: poolMax });
  const level = process.env.BENCH_LOG_LEVEL;
  // bench:events' agents send as many log lines as the path stores, past any server's budget.
  const app = await buildApp({ database, masterKey, agentLimits: BENCH_AGENT_LIMITS, ...(level ? { logger: { level, file: "/dev/null" } } : {}) });
  instruments?.timeRequests(app.server);
  await app.listen({ port: 0, host: "127.0.0.1" });
  port = (app.server.address() as AddressInfo).port;
  close = async () => {
    await app.close();
    await database.close();
  };
} else {
  // Exactly what createDb builds, minus drizzle.
  const pool = new pg.Pool({ connectionString: url, max: poolMax });
  pool.on("error", () => {});
  const app = buildBareApp(pool, { meter: variant === "bare-auth" });
  instruments?.timeRequests(app.server);
  await app.listen({ port: 0, host: "127.0.0.1" });
  port = (app.server.address() as AddressInfo).port;
  close = async () => {
    await app.close();
    await pool.end();
  };
}

async function handle(cmd: Command): Promise<void> {
  switch (cmd.type) {
    case "profile-start":
      await profiler.start();
      return send({ type: "done", of: cmd.type });
    case "profile-stop":
      await profiler.stop(cmd.file);
      return send({ type: "done", of: cmd.type });
    case "stats":
      return send({ type: "done", of: cmd.type, ...(instruments ? { stats: instruments.take() } : {}) });
    case "close":
      await close();
      // The IPC channel would keep the process alive.
      process.exit(0);
  }
}

process.on("message", (cmd: Command) => {
  handle(cmd).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
});
send({ type: "ready", port });
