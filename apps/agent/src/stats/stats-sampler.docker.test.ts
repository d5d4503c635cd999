// The sampler: real readings of this host and engine, a schedule that never overlaps, and
// the CPU share computed from counters.
import { describe, expect, it } from "vitest";
import type { EventInput } from "@berth/protocol";
import { DOCKER_SOCKET } from "../agent/agent.test-helpers.ts";
import { systemClock } from "../clock.ts";
import { createDockerClient } from "../docker/docker-client.ts";
import { eventProblem } from "../events/wire-events.ts";
import { silentLogger } from "../logger.ts";
import { cpuPercent, hostReadings, type HostReadings } from "./host-readings.ts";
import { createStatsSampler } from "./stats-sampler.ts";

function collect() {
  const events: EventInput[] = [];
  const append = (event: EventInput) => {
    events.push(event);
    return { seq: events.length, ts: "", kind: event.kind, level: null, body: {} };
  };
  return { events, outbox: { append } };
}

describe("stats sampler", () => {
  it("samples this host and its Docker engine into a valid stats event, cheaply", async () => {
    const { events, outbox } = collect();
    const sampler = createStatsSampler({
      outbox,
      docker: createDockerClient({ socketPath: DOCKER_SOCKET }),
      clock: systemClock,
      logger: silentLogger,
    });
    await new Promise((resolve) => setTimeout(resolve, 100)); // A CPU baseline to diff against.
    await sampler.sampleOnce();

    const [stats] = events;
    expect(stats).toBeDefined();
    expect(eventProblem(stats!)).toBeNull();
    expect(stats).toMatchObject({
      kind: "stats",
      ram_total_mb: expect.any(Number),
      disk_total_gb: expect.any(Number),
      containers_running: expect.any(Number),
      containers_total: expect.any(Number),
    });
    if (stats?.kind !== "stats") throw new Error("not a stats event");
    expect(stats.ram_used_mb).toBeLessThanOrEqual(stats.ram_total_mb);
    expect(stats.disk_used_gb).toBeLessThanOrEqual(stats.disk_total_gb);
    expect(stats.cpu_percent).toBeGreaterThanOrEqual(0);
    expect(stats.cpu_percent).toBeLessThanOrEqual(100);
    const cost = sampler.lastCost();
    expect(cost).not.toBeNull();
    // Generous bound for a loaded CI machine; measured here at a few ms.
    expect(cost?.wall_ms).toBeLessThan(1_000);
  });

  it("schedules the next run when the current one ends, so runs never overlap", async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const slow: HostReadings = {
      ...hostReadings,
      memory: async () => {
        active += 1;
        runs += 1;
        maxActive = Math.max(maxActive, active);
        await new Promise((resolve) => setTimeout(resolve, 60)); // Slower than the interval.
        active -= 1;
        return { total_bytes: 4 * 1024 ** 3, available_bytes: 1024 ** 3 };
      },
    };
    const { events, outbox } = collect();
    const sampler = createStatsSampler({
      outbox,
      docker: { containerCounts: async () => ({ running: 1, total: 2 }) },
      clock: systemClock,
      logger: silentLogger,
      intervalMs: 10,
      readings: slow,
    });
    sampler.start();
    await new Promise((resolve) => setTimeout(resolve, 400));
    await sampler.stop();
    const after = runs;
    await new Promise((resolve) => setTimeout(resolve, 100));

    expect(maxActive).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(runs).toBe(after); // Nothing runs after stop.
    expect(events.length).toBe(runs);
    expect(events[0]).toMatchObject({ ram_total_mb: 4096, ram_used_mb: 3072, containers_running: 1, containers_total: 2 });
  });

  it("keeps sampling with zero containers while Docker is unreachable", async () => {
    const { events, outbox } = collect();
    const sampler = createStatsSampler({
      outbox,
      docker: createDockerClient({ socketPath: "/nonexistent/docker.sock" }),
      clock: systemClock,
      logger: silentLogger,
    });
    await sampler.sampleOnce();
    expect(events[0]).toMatchObject({ kind: "stats", containers_running: 0, containers_total: 0 });
  });

  it("computes the host's CPU share from counter deltas", () => {
    expect(cpuPercent({ busy: 100, total: 1_000 }, { busy: 350, total: 2_000 })).toBe(25);
    expect(cpuPercent({ busy: 0, total: 0 }, { busy: 0, total: 0 })).toBe(0);
    expect(cpuPercent({ busy: 0, total: 0 }, { busy: 5, total: 4 })).toBe(100);
  });
});
