// The control plane under test, alone in its own process so that its RSS and CPU can be read
// from /proc without the load generator mixed in. Started by fleet.bench.ts with fork (IPC)
// and `--import tsx --expose-gc`; reports { event: "ready", port } once it listens.
//
// Environment: BENCH_DATABASE_URL, BENCH_MASTER_KEY (base64, 32 bytes), BENCH_HEARTBEAT_MS,
// BENCH_POOL_MAX (createDb's default of 10 unless set), BENCH_INSTRUMENT=1 (time every SQL
// statement and pool wait; costs a little CPU), BENCH_LOG_LEVEL (pino at that level to
// /dev/null, as server.ts logs at info; unset keeps buildApp's default of no logger),
// BENCH_COLD_SIGNER=1 (do not load the signing key before the run; see below).
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createDb } from "@berth/db";
import { buildApp } from "@berth/control-plane";
import { monoMs, serveRequests, type CpEvent, type CpReplies, type CpRequest, type IssueResult } from "./ipc.ts";
import { instrumentPg } from "./pg-instrument.ts";
import { summarizeProfile, type CpuProfile } from "./profile.ts";
import { BENCH_AGENT_LIMITS } from "../settings.ts";

const url = process.env.BENCH_DATABASE_URL;
const masterKey = Buffer.from(process.env.BENCH_MASTER_KEY ?? "", "base64");
const heartbeatMs = Number(process.env.BENCH_HEARTBEAT_MS ?? 15_000);
const poolMax = Number(process.env.BENCH_POOL_MAX ?? 10);
if (!url || masterKey.length !== 32 || !process.send) {
  throw new Error("control-plane-process.ts is started by fleet.bench.ts (fork with IPC, BENCH_DATABASE_URL, BENCH_MASTER_KEY)");
}

const queries = process.env.BENCH_INSTRUMENT === "1" ? instrumentPg() : null;
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

const database = createDb(url, { max: poolMax });
const level = process.env.BENCH_LOG_LEVEL;
// Ten thousand agents from one address, and a blast far past a server's log budget.
const app = await buildApp({ database, masterKey, heartbeatMs, agentLimits: BENCH_AGENT_LIMITS, ...(level ? { logger: { level, file: "/dev/null" } } : {}) });
// Load the command-signing key once, as the first enrolment or command would. Cold, every
// issue() fetches it through the pool from inside its own transaction; with as many issue()
// calls in flight as the pool has clients, each holds one and waits for another: the pool
// deadlocks (BENCH_COLD_SIGNER=1 keeps it cold to show this).
if (process.env.BENCH_COLD_SIGNER !== "1") await app.services.signer.pinnedKeys();
await app.listen({ port: 0, host: "127.0.0.1" });
const port = (app.server.address() as AddressInfo).port;

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const gc = (globalThis as { gc?: () => void }).gc;
let profiler: Session | null = null;

/**
 * Issues one command per server id at a steady rate, without waiting for earlier ones (open
 * loop); stops starting new ones after `deadlineMs`, so an overloaded control plane still ends.
 */
async function issueAtRate(organizationId: string, serverIds: string[], ratePerSec: number, deadlineMs: number): Promise<IssueResult> {
  const result: IssueResult = { issued: [], errors: [], skipped: 0 };
  const pending: Promise<void>[] = [];
  const start = performance.now();
  const intervalMs = 1000 / ratePerSec;
  for (let i = 0; i < serverIds.length; i++) {
    if (performance.now() - start > deadlineMs) {
      result.skipped = serverIds.length - i;
      break;
    }
    const due = start + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const serverId = serverIds[i]!;
    const t0 = monoMs();
    pending.push(
      app.services.agentCommands
        .issue({ organizationId, serverId, type: "diagnostics", params: {}, issuedBy: "system:fleet-bench" })
        .then(
          (row) => {
            result.issued.push([row.commandId, t0, monoMs() - t0]);
          },
          (err: unknown) => {
            result.errors.push(err instanceof Error ? err.message : String(err));
          },
        ),
    );
  }
  // An overloaded control plane may take very long to finish the last ones; answer with what
  // finished within 15 s (later completions are not counted).
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((r) => (timer = setTimeout(r, 15_000)));
  await Promise.race([Promise.all(pending), grace]);
  clearTimeout(timer);
  const unfinished = pending.length - result.issued.length - result.errors.length;
  if (unfinished > 0) result.errors.push(`${unfinished} issue() calls still running 15 s after the last was started`);
  return { issued: [...result.issued], errors: [...result.errors], skipped: result.skipped };
}

async function handle(request: CpRequest): Promise<CpReplies[CpRequest["type"]]> {
  switch (request.type) {
    case "memory": {
      if (request.gc && gc) {
        gc();
        gc();
      }
      const m = process.memoryUsage();
      return { rssMb: mb(m.rss), heapUsedMb: mb(m.heapUsed), heapTotalMb: mb(m.heapTotal), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers) };
    }
    case "connected":
      return { count: app.gateway.connectedCount() };
    case "issue":
      return issueAtRate(request.organizationId, request.serverIds, request.ratePerSec, request.deadlineMs);
    case "loop": {
      const figures = {
        p50Ms: loop.percentile(50) / 1e6,
        p99Ms: loop.percentile(99) / 1e6,
        maxMs: loop.max / 1e6,
        meanMs: loop.mean / 1e6,
      };
      loop.reset();
      return figures;
    }
    case "queries":
      return queries?.take() ?? null;
    case "profile-start":
      profiler = new Session();
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.setSamplingInterval", { interval: 500 });
      await profiler.post("Profiler.start");
      return null;
    case "profile-stop": {
      if (!profiler) throw new Error("profiler not started");
      const { profile } = await profiler.post("Profiler.stop");
      profiler.disconnect();
      profiler = null;
      await writeFile(request.file, JSON.stringify(profile));
      return summarizeProfile(profile as unknown as CpuProfile, request.file);
    }
    case "close": {
      await app.close();
      await database.close();
      setImmediate(() => process.exit(0));
      return null;
    }
  }
}

serveRequests<CpRequest>(handle);
process.send({ event: "ready", port, pid: process.pid } satisfies CpEvent);
