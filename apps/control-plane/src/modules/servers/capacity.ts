// How much room a server has for another environment: what its environments have been
// given (allocation) and what the host really uses now (live figures), whichever is tighter.
import type { CapacityServerRow, PlacedEnvironmentRow } from "./servers.repo.ts";
import { proxyView } from "../routing/routing-view.ts";

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The size of a new environment when none is given (the environments table's defaults). */
export const DEFAULT_ENVIRONMENT = { cpu_cores: 1, ram_mb: 2048, disk_gb: 20 } as const;

export interface HostSize {
  cpuCores: number;
  ramMb: number;
  diskGb: number;
}

export interface LiveFigures {
  ramUsedMb: number;
  ramTotalMb: number;
  diskUsedGb: number;
  diskTotalGb: number;
}

export interface Allocation {
  cpuCores: number;
  ramMb: number;
  diskGb: number;
}

export interface Capacity {
  free_cpu_cores: number;
  free_ram_mb: number;
  free_disk_gb: number;
  /** Default-size environments that still fit. */
  fits_default: number;
  /** room: at least one fits; full: none does; unknown: the host's size is not known yet (never connected). */
  room: "room" | "full" | "unknown";
}

const floorDiv = (free: number, per: number) => Math.max(0, Math.floor(free / per));

export function capacityOf(host: HostSize, allocated: Allocation, live: LiveFigures | null): Capacity {
  const totalRam = live ? live.ramTotalMb : host.ramMb;
  const totalDisk = live ? live.diskTotalGb : host.diskGb;
  if (host.cpuCores <= 0 || totalRam <= 0 || totalDisk <= 0) {
    return { free_cpu_cores: 0, free_ram_mb: 0, free_disk_gb: 0, fits_default: 0, room: "unknown" };
  }
  // Allocation can be over-committed on paper; what the host really has left also bounds it.
  const freeCpu = Math.max(0, host.cpuCores - allocated.cpuCores);
  const freeRam = Math.max(0, Math.min(totalRam - allocated.ramMb, live ? live.ramTotalMb - live.ramUsedMb : Infinity));
  const freeDisk = Math.max(0, Math.min(totalDisk - allocated.diskGb, live ? live.diskTotalGb - live.diskUsedGb : Infinity));
  const fits = Math.min(
    floorDiv(freeCpu, DEFAULT_ENVIRONMENT.cpu_cores),
    floorDiv(freeRam, DEFAULT_ENVIRONMENT.ram_mb),
    floorDiv(freeDisk, DEFAULT_ENVIRONMENT.disk_gb),
  );
  return {
    free_cpu_cores: freeCpu,
    free_ram_mb: Math.round(freeRam),
    free_disk_gb: Math.round(freeDisk * 10) / 10,
    fits_default: fits,
    room: fits > 0 ? "room" : "full",
  };
}

/** A server of the capacity view: its figures, the environments on it (those the caller may see listed), what they were given and the room left. */
export function capacityServerView(s: CapacityServerRow, placed: PlacedEnvironmentRow[], visible: (projectId: string) => boolean) {
  const allocated = { cpu_cores: 0, ram_mb: 0, disk_gb: 0 };
  for (const e of placed) {
    allocated.cpu_cores += e.cpu_cores;
    allocated.ram_mb += e.ram_mb;
    allocated.disk_gb += e.disk_gb;
  }
  const stats =
    s.sampled_at === null
      ? null
      : {
          sampled_at: iso(s.sampled_at)!,
          cpu_percent: s.cpu_percent!,
          ram_used_mb: s.ram_used_mb!,
          ram_total_mb: s.ram_total_mb!,
          disk_used_gb: s.disk_used_gb!,
          disk_total_gb: s.disk_total_gb!,
          load1: s.load1!,
          load5: s.load5!,
          load15: s.load15!,
          containers_running: s.containers_running!,
          containers_total: s.containers_total!,
        };
  const live = stats && { ramUsedMb: stats.ram_used_mb, ramTotalMb: stats.ram_total_mb, diskUsedGb: stats.disk_used_gb, diskTotalGb: stats.disk_total_gb };
  return {
    id: s.id,
    name: s.name,
    hostname: s.hostname,
    status: s.status,
    last_seen_at: iso(s.last_seen_at),
    agent_version: s.agent_version,
    proxy: proxyView(s.proxy),
    cpu_cores: s.cpu_cores,
    ram_mb: s.ram_mb,
    disk_gb: s.disk_gb,
    stats,
    environment_count: placed.length,
    environments: placed.filter((e) => visible(e.project_id)).map(({ server_id: _s, ...e }) => e),
    allocated,
    capacity: capacityOf(
      { cpuCores: s.cpu_cores, ramMb: s.ram_mb, diskGb: s.disk_gb },
      { cpuCores: allocated.cpu_cores, ramMb: allocated.ram_mb, diskGb: allocated.disk_gb },
      live,
    ),
  };
}
