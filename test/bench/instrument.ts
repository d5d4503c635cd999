// Optional instruments for a server under test, switched on by the benchmark to find where
// the time goes. They cost throughput themselves, so figures taken with them on are only
// comparable with each other, never with a clean run.
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import type { Server } from "node:http";
import pg from "pg";

export interface Timing {
  count: number;
  totalMs: number;
  maxMs: number;
}

export interface Stats {
  /** Per statement (first words of its SQL): time on the connection, from send to result. */
  onConnection: Record<string, Timing>;
  /** Per statement: from pool.query to result, i.e. including the wait for a free client. */
  throughPool: Record<string, Timing>;
  /** Per request: from the server's 'request' event to the response's 'finish'. */
  request: Timing;
}

const label = (q: unknown): string => {
  const text = typeof q === "string" ? q : ((q as { text?: string } | null)?.text ?? "?");
  return text.replace(/\s+/g, " ").trim().slice(0, 70);
};

const add = (map: Record<string, Timing>, key: string, ms: number) => {
  const t = (map[key] ??= { count: 0, totalMs: 0, maxMs: 0 });
  t.count++;
  t.totalMs += ms;
  if (ms > t.maxMs) t.maxMs = ms;
};

type QueryFn = (this: unknown, ...args: unknown[]) => unknown;

/** Wraps query in both forms: pg-pool calls the client with a callback, the app calls the pool for a promise. */
function timeQueries(proto: { query: QueryFn }, record: (key: string, ms: number) => void) {
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const start = performance.now();
    const key = label(args[0]);
    const last = args[args.length - 1];
    if (typeof last === "function") {
      args[args.length - 1] = (...cbArgs: unknown[]) => {
        record(key, performance.now() - start);
        return (last as (...a: unknown[]) => unknown)(...cbArgs);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === "function") {
      (result as Promise<unknown>).then(
        () => record(key, performance.now() - start),
        () => {},
      );
    }
    return result;
  };
}

const emptyStats = (): Stats => ({ onConnection: {}, throughPool: {}, request: { count: 0, totalMs: 0, maxMs: 0 } });

/** Times every SQL statement (on the connection and through the pool) and, once given the server, every request. */
export function createInstruments() {
  let stats = emptyStats();
  timeQueries(pg.Client.prototype as unknown as { query: QueryFn }, (key, ms) => add(stats.onConnection, key, ms));
  timeQueries(pg.Pool.prototype as unknown as { query: QueryFn }, (key, ms) => add(stats.throughPool, key, ms));
  return {
    timeRequests(server: Server) {
      server.prependListener("request", (_req, res) => {
        const start = performance.now();
        res.once("finish", () => {
          const ms = performance.now() - start;
          const t = stats.request;
          t.count++;
          t.totalMs += ms;
          if (ms > t.maxMs) t.maxMs = ms;
        });
      });
    },
    /** The figures since the last call. */
    take(): Stats {
      const out = stats;
      stats = emptyStats();
      return out;
    },
  };
}

/** The V8 CPU profiler over exactly one measured run (not start-up, not the warm-up). */
export function cpuProfiler() {
  const session = new Session();
  session.connect();
  return {
    async start() {
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 200 });
      await session.post("Profiler.start");
    },
    async stop(file: string) {
      const { profile } = await session.post("Profiler.stop");
      await writeFile(file, JSON.stringify(profile));
    },
  };
}
