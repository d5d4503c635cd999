// The `diagnostics` command: what support needs to see first about a server. Read-only.
// Each part has its own deadline and failure, so one slow or broken part (docker df walks
// every layer) yields a partial report instead of none.
import type { Clock } from "../../clock.ts";
import type { DockerDiskUsage } from "../../docker/docker-client.ts";
import type { Journal, JournalStats } from "../../journal/journal-types.ts";
import { filesystemUsage, toGb } from "../../stats/filesystem-usage.ts";
import { AGENT_VERSION } from "../../version.ts";
import type { CommandHandler, JsonObject } from "../runner/handler-types.ts";

export interface DiagnosticsDeps {
  journal: Pick<Journal, "stats">;
  stateDir: string;
  startedAt: Date;
  clock: Clock;
  /** Deadline of `docker system df`. Default 15 s. */
  diskUsageDeadlineMs?: number;
}

export function createDiagnosticsHandler(deps: DiagnosticsDeps): CommandHandler<"diagnostics"> {
  return async (_params, ctx) => {
    ctx.emit.log("info", "Collecting diagnostics");
    const problems: string[] = [];
    const attempt = async <T>(what: string, work: () => Promise<T>): Promise<T | { error: string }> => {
      try {
        return await work();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        problems.push(`${what}: ${message}`);
        return { error: message };
      }
    };

    const [version, info, usage, stateFs] = await Promise.all([
      attempt("docker version", () => ctx.docker.version()),
      attempt("docker info", () => ctx.docker.info()),
      attempt("docker disk usage", () => ctx.docker.diskUsage(deps.diskUsageDeadlineMs ?? 15_000)),
      attempt("state directory filesystem", () => filesystemUsage(deps.stateDir)),
    ]);
    ctx.signal.throwIfAborted();
    const rootDir = "error" in info ? null : info.root_dir;
    const dockerFs = rootDir === null ? null : await attempt("docker root filesystem", () => filesystemUsage(rootDir));

    for (const problem of problems) ctx.emit.log("warning", `Diagnostics incomplete: ${problem}`);
    const now = deps.clock.now();
    return {
      partial: problems.length > 0,
      collected_at: now.toISOString(),
      agent: {
        version: AGENT_VERSION,
        node_version: process.version,
        pid: process.pid,
        started_at: deps.startedAt.toISOString(),
        uptime_s: Math.round((now.getTime() - deps.startedAt.getTime()) / 1000),
        rss_mb: Math.round(process.memoryUsage.rss() / 1024 ** 2),
      },
      docker: {
        reachable: !("error" in version && "error" in info),
        ...("error" in version ? { version: null, api_version: null } : version),
        ...("error" in info
          ? { containers_running: null, containers_total: null, images: null, root_dir: null, error: info.error }
          : info),
      },
      disk: {
        state_dir: { path: deps.stateDir, ...fsReport(stateFs) },
        docker_root: rootDir === null || dockerFs === null ? null : { path: rootDir, ...fsReport(dockerFs) },
        docker_usage: "error" in usage ? { complete: false, error: usage.error } : { complete: true, ...usageReport(usage) },
      },
      journal: journalReport(deps.journal.stats()),
    };
  };
}

function fsReport(fs: Awaited<ReturnType<typeof filesystemUsage>> | { error: string }): JsonObject {
  if ("error" in fs) return { error: fs.error };
  return { total_gb: toGb(fs.total_bytes), used_gb: toGb(fs.used_bytes), available_gb: toGb(fs.available_bytes) };
}

function usageReport(usage: DockerDiskUsage): JsonObject {
  return {
    images_gb: toGb(usage.images_bytes),
    containers_gb: toGb(usage.containers_bytes),
    volumes_gb: toGb(usage.volumes_bytes),
    build_cache_gb: toGb(usage.build_cache_bytes),
    images: usage.images,
    volumes: usage.volumes,
  };
}

function journalReport(stats: JournalStats): JsonObject {
  return {
    pending_events: stats.pendingCount,
    pending_bytes: stats.pendingBytes,
    oldest_pending_age_ms: stats.oldestPendingAgeMs,
    next_event_seq: stats.nextEventSeq,
    last_acked_seq: stats.lastAckedSeq,
    last_command_seq: stats.lastCommandSeq,
    dropped_total: stats.droppedTotal,
    over_cap: stats.overCap,
    file_bytes: stats.fileBytes + stats.walBytes,
  };
}
