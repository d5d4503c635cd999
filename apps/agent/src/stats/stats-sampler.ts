// Host figures every 10 s as `stats` events. The next run is scheduled when the current one
// ends, so a slow reading delays the sampler instead of piling runs on top of each other.
// Each run's cost is measured and kept, so the agent's own overhead is visible.
import type { Clock, TimerHandle } from "../clock.ts";
import type { DockerClient } from "../docker/docker-client.ts";
import type { EventOutbox } from "../events/event-outbox.ts";
import type { Logger } from "../logger.ts";
import { BYTES_PER_MB, toGb } from "./filesystem-usage.ts";
import { cpuPercent, hostReadings, type HostReadings } from "./host-readings.ts";

export interface SamplerCost {
  at: string;
  wall_ms: number;
  /** CPU time of this process (user + system) the run took. */
  cpu_ms: number;
}

export interface StatsSampler {
  start(): void;
  /** Stops scheduling and waits for a run in progress. */
  stop(): Promise<void>;
  /** One run now: reads the host and appends a `stats` event. */
  sampleOnce(): Promise<void>;
  lastCost(): SamplerCost | null;
}

export interface StatsSamplerDeps {
  outbox: Pick<EventOutbox, "append">;
  docker: Pick<DockerClient, "containerCounts">;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
  readings?: HostReadings;
}

export function createStatsSampler(deps: StatsSamplerDeps): StatsSampler {
  const { clock, logger } = deps;
  const intervalMs = deps.intervalMs ?? 10_000;
  const readings = deps.readings ?? hostReadings;
  let cpuBefore = readings.cpuTimes();
  let timer: TimerHandle | undefined;
  let running: Promise<void> | null = null;
  let stopped = true;
  let cost: SamplerCost | null = null;
  let dockerDown = false;

  async function containers(): Promise<{ running: number; total: number }> {
    try {
      const counts = await deps.docker.containerCounts();
      if (dockerDown) logger.info({}, "Docker engine reachable again");
      dockerDown = false;
      return counts;
    } catch (error) {
      // Logged on the change only: an engine that is down stays down for many samples.
      if (!dockerDown) logger.warn({ error: String(error) }, "Docker engine unreachable; stats report 0 containers");
      dockerDown = true;
      return { running: 0, total: 0 };
    }
  }

  async function sampleOnce(): Promise<void> {
    const startedAt = performance.now();
    const cpuUsageBefore = process.cpuUsage();
    const [memory, disk, counts] = await Promise.all([readings.memory(), readings.rootFilesystem(), containers()]);
    const cpuNow = readings.cpuTimes();
    const [load1, load5, load15] = readings.loadavg();
    deps.outbox.append({
      kind: "stats",
      cpu_percent: cpuPercent(cpuBefore, cpuNow),
      ram_used_mb: Math.round((memory.total_bytes - memory.available_bytes) / BYTES_PER_MB),
      ram_total_mb: Math.round(memory.total_bytes / BYTES_PER_MB),
      disk_used_gb: toGb(disk.used_bytes),
      disk_total_gb: toGb(disk.total_bytes),
      load1: round2(load1),
      load5: round2(load5),
      load15: round2(load15),
      containers_running: counts.running,
      containers_total: counts.total,
    });
    cpuBefore = cpuNow;
    const used = process.cpuUsage(cpuUsageBefore);
    cost = {
      at: clock.now().toISOString(),
      wall_ms: round2(performance.now() - startedAt),
      cpu_ms: round2((used.user + used.system) / 1000),
    };
    logger.debug({ ...cost }, "stats sampled");
  }

  function schedule(): void {
    if (stopped) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      running = sampleOnce()
        .catch((error: unknown) => logger.warn({ error: String(error) }, "stats sample failed"))
        .finally(() => {
          running = null;
          schedule();
        });
    }, intervalMs);
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      // The first CPU figure needs a baseline one interval old.
      cpuBefore = readings.cpuTimes();
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      if (running !== null) await running;
    },
    sampleOnce,
    lastCost: () => cost,
  };
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
