// Times every SQL statement the control plane runs (on the connection, send to result) and
// every wait for a pool client, by patching pg's prototypes inside the control-plane child.
// Nothing in apps/ changes; the patch costs a little CPU, so runs with it are only compared
// with each other.
import pg from "pg";
import type { QueryStats, Timing } from "./ipc.ts";

type AnyFn = (this: unknown, ...args: unknown[]) => unknown;

const label = (q: unknown): string => {
  const text = typeof q === "string" ? q : ((q as { text?: unknown } | null)?.text ?? "?");
  return String(text).replace(/\s+/g, " ").trim().slice(0, 90);
};

function add(map: Record<string, Timing>, key: string, ms: number) {
  const t = (map[key] ??= { count: 0, totalMs: 0, maxMs: 0 });
  t.count++;
  t.totalMs += ms;
  if (ms > t.maxMs) t.maxMs = ms;
}

/** Wraps a method in its callback and promise forms; `record` gets the elapsed ms. */
function wrap(proto: object, method: string, key: (args: unknown[]) => string, record: (key: string, ms: number) => void) {
  const target = proto as Record<string, AnyFn>;
  const original = target[method]!;
  target[method] = function (this: unknown, ...args: unknown[]) {
    const start = performance.now();
    const k = key(args);
    const last = args[args.length - 1];
    if (typeof last === "function") {
      args[args.length - 1] = function (this: unknown, ...cbArgs: unknown[]) {
        record(k, performance.now() - start);
        return (last as AnyFn).apply(this, cbArgs);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === "function") {
      (result as Promise<unknown>).then(
        () => record(k, performance.now() - start),
        () => record(k, performance.now() - start),
      );
    }
    return result;
  };
}

export function instrumentPg(): { take(): QueryStats } {
  let stats: QueryStats = { byStatement: {}, poolWait: { count: 0, totalMs: 0, maxMs: 0 } };
  wrap(pg.Client.prototype, "query", (args) => label(args[0]), (k, ms) => add(stats.byStatement, k, ms));
  wrap(pg.Pool.prototype, "connect", () => "connect", (_k, ms) => {
    const t = stats.poolWait;
    t.count++;
    t.totalMs += ms;
    if (ms > t.maxMs) t.maxMs = ms;
  });
  return {
    take() {
      const taken = stats;
      stats = { byStatement: {}, poolWait: { count: 0, totalMs: 0, maxMs: 0 } };
      return taken;
    },
  };
}
