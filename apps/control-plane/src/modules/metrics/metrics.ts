// The control plane's Prometheus metrics, one registry per app (a process may hold several
// apps, e.g. tests). Instruments that code updates as things happen (HTTP requests, command
// dispatch, event ingest, job failures) are fed through the `observe` functions below; the
// rest (agents connected, job queue depth, event-stream subscribers, pool connections and
// the agents' own host figures) are read from their owners at each scrape (`Sources`).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { StatsEvent } from "@berth/protocol";
import { createRequestMetrics } from "./request-metrics.ts";
import { tableOfPartition } from "../retention/retention.ts";

/** What the registry asks at each scrape. Each may fail (the database is down): that series is then left out. */
export interface Sources {
  agentsConnected(): number;
  /** The latest host figures per server whose agent is connected to this replica. */
  agentStats(): Iterable<[string, StatsEvent]>;
  sseSubscribers(): number;
  /** This replica is draining (SIGTERM, lifecycle/drain.ts). */
  draining(): boolean;
  pool(): { total: number; idle: number; waiting: number };
  /** Jobs waiting per queue (dead-letter queues included). */
  queueDepths(): Promise<Map<string, number>>;
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUEUE_DEPTH_TIMEOUT_MS = 2_000;
const LAG_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "berth_" });
  let sources: Sources | null = null;

  // The same count as the histogram's _count, as a plain counter: simpler to query and to alert on.
  // Bounded: methods the HTTP parser knows, route patterns (never raw URLs) and status codes.
  const requests = createRequestMetrics(registry, {
    duration: { name: "berth_http_request_duration_seconds", help: "HTTP requests by method, route pattern and status code, and how long each took", buckets: SECONDS },
    count: { name: "berth_http_requests_total", help: "HTTP requests by method, route pattern and status code" },
  });
  const dispatch = new Histogram({
    name: "berth_command_dispatch_seconds",
    help: "From a command's issue to its agent accepting it",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300],
    registers: [registry],
  });
  const eventsIngested = new Counter({
    name: "berth_events_ingested_total",
    help: "Agent events received over the link and acknowledged (stored, or already stored: resends count again), by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
  });
  const ingestLag = new Histogram({
    name: "berth_event_ingest_lag_seconds",
    help: "From an event's time on its agent to its storing here",
    buckets: LAG_SECONDS,
    registers: [registry],
  });
  const jobFailures = new Counter({
    name: "berth_job_failures_total",
    help: "Job tries that failed, by queue; final: no retry follows (the job went to its dead-letter queue)",
    labelNames: ["queue", "final"] as const,
    registers: [registry],
  });

  const retentionLastRun = new Gauge({
    name: "berth_retention_last_run_timestamp_seconds",
    help: "When the retention job last ran to its end here (Unix time): alert when it falls behind the hourly schedule",
    registers: [registry],
  });
  const retentionDropped = new Counter({
    name: "berth_retention_partitions_dropped_total",
    help: "Expired month partitions of deployment_logs and agent_events the retention job dropped, by table",
    labelNames: ["table"] as const,
    registers: [registry],
  });
  const retentionDeleted = new Counter({
    name: "berth_retention_rows_deleted_total",
    help: "Expired rows the retention job deleted from the DEFAULT partitions (rows dated where no month partition is)",
    registers: [registry],
  });

  const handedOver = new Counter({
    name: "berth_agents_handed_over_total",
    help: "Agent links this replica closed with 1012 while draining, so their agents reconnect to another replica",
    registers: [registry],
  });

  const gauge = (name: string, help: string, read: (s: Sources) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        if (sources) this.set(read(sources));
      },
    });
  gauge("berth_agents_connected", "Agents connected to this replica", (s) => s.agentsConnected());
  gauge("berth_sse_subscribers", "Open event streams on this replica", (s) => s.sseSubscribers());
  gauge("berth_draining", "1 while this replica drains (SIGTERM: /readyz 503, agents and event streams handed over), else 0", (s) => (s.draining() ? 1 : 0));
  new Gauge({
    name: "berth_db_pool_connections",
    help: "The database pool of this replica: total and idle connections, and requests waiting for one",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      if (!sources) return;
      const p = sources.pool();
      this.set({ state: "total" }, p.total);
      this.set({ state: "idle" }, p.idle);
      this.set({ state: "waiting" }, p.waiting);
    },
  });
  new Gauge({
    name: "berth_job_queue_depth",
    help: "Jobs waiting in each queue (pg-boss; <queue>.dead are dead-letter queues)",
    labelNames: ["queue"] as const,
    registers: [registry],
    async collect() {
      this.reset();
      if (!sources) return;
      // A database that does not answer must not hang the scrape: the depths are then left out.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), QUEUE_DEPTH_TIMEOUT_MS)));
      const depths = await Promise.race([sources.queueDepths().catch(() => null), late]).finally(() => clearTimeout(timer));
      for (const [queue, n] of depths ?? []) this.set({ queue }, n);
    },
  });

  // The agents' own figures, per server: only those connected here, so the series stay bounded.
  const hostFigures: [string, string, (s: StatsEvent) => number][] = [
    ["berth_server_cpu_percent", "Host CPU use, 0 to 100 (agent's figure)", (s) => s.cpu_percent],
    ["berth_server_memory_used_bytes", "Host memory used (agent's figure)", (s) => s.ram_used_mb * 1024 * 1024],
    ["berth_server_memory_total_bytes", "Host memory (agent's figure)", (s) => s.ram_total_mb * 1024 * 1024],
    ["berth_server_disk_used_bytes", "Host disk used (agent's figure)", (s) => s.disk_used_gb * 1024 ** 3],
    ["berth_server_disk_total_bytes", "Host disk size (agent's figure)", (s) => s.disk_total_gb * 1024 ** 3],
    ["berth_server_load1", "Host load average over 1 minute (agent's figure)", (s) => s.load1],
    ["berth_server_containers_running", "Containers running on the host (agent's figure)", (s) => s.containers_running],
  ];
  for (const [name, help, read] of hostFigures) {
    new Gauge({
      name,
      help,
      labelNames: ["server_id"] as const,
      registers: [registry],
      collect() {
        this.reset();
        if (!sources) return;
        for (const [serverId, stats] of sources.agentStats()) this.set({ server_id: serverId }, read(stats));
      },
    });
  }

  return {
    registry,
    /** Where the scrape-time figures come from (set once the app's parts exist). */
    attach(s: Sources) {
      sources = s;
    },
    observe: {
      /** Runs on every request: plain additions, the series are built at each scrape (request-metrics.ts). */
      request: requests.observe,
      commandAccepted(seconds: number) {
        dispatch.observe(Math.max(0, seconds));
      },
      eventsIngested(events: readonly { kind: string; ts: string }[], now: number) {
        for (const e of events) {
          eventsIngested.inc({ kind: e.kind });
          const at = Date.parse(e.ts);
          if (Number.isFinite(at)) ingestLag.observe(Math.max(0, (now - at) / 1000));
        }
      },
      agentHandedOver() {
        handedOver.inc();
      },
      jobFailed(queue: string, final: boolean) {
        jobFailures.inc({ queue, final: String(final) });
      },
      /** A retention run that took the lock and finished; `dropped` are partition names (<table>_pYYYYMM). */
      retentionRan(run: { dropped: readonly string[]; deleted: number }, at: Date) {
        retentionLastRun.set(at.getTime() / 1000);
        for (const name of run.dropped) retentionDropped.inc({ table: tableOfPartition(name) });
        if (run.deleted > 0) retentionDeleted.inc(run.deleted);
      },
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
export type MetricsObserver = Metrics["observe"];
