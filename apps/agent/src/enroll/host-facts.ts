// Facts about this machine reported at enrolment (shown as the server's capacity). Gathered
// once, so cost matters less than in the sampler; each reading still has a deadline and a
// fallback, because an enrolment must not fail on a slow `lscpu`.
import { arch, availableParallelism, hostname, release, totalmem, type } from "node:os";
import type { HostFacts } from "@berth/protocol";
import type { DockerClient } from "../docker/docker-client.ts";
import { BYTES_PER_GB, BYTES_PER_MB, filesystemUsage } from "../stats/filesystem-usage.ts";
import { withDeadline } from "../with-deadline.ts";

const READ_DEADLINE_MS = 10_000;

export async function gatherHostFacts(docker: Pick<DockerClient, "version">): Promise<HostFacts> {
  // Loaded only here (enrolment): the running daemon never pays for systeminformation.
  const { default: si } = await import("systeminformation");
  const [osInfo, cpu, mem, rootFs, dockerVersion] = await Promise.all([
    orNull(withDeadline(si.osInfo(), READ_DEADLINE_MS, "os info")),
    orNull(withDeadline(si.cpu(), READ_DEADLINE_MS, "cpu info")),
    orNull(withDeadline(si.mem(), READ_DEADLINE_MS, "memory info")),
    orNull(filesystemUsage("/")),
    orNull(docker.version()),
  ]);
  const os = osInfo !== null && osInfo.distro !== "" ? `${osInfo.distro} ${osInfo.release}`.trim() : `${type()} ${release()}`;
  return {
    hostname: clip(osInfo?.hostname || hostname(), 253) || "unknown",
    os: clip(os, 200),
    arch: clip(osInfo?.arch || arch(), 32),
    cpu_cores: cpu !== null && cpu.cores > 0 ? cpu.cores : availableParallelism(),
    ram_mb: Math.round((mem?.total ?? totalmem()) / BYTES_PER_MB),
    disk_gb: rootFs === null ? 0 : Math.round(rootFs.total_bytes / BYTES_PER_GB),
    // Null, not an error: a server may be enrolled before Docker is installed.
    docker_version: dockerVersion === null ? null : clip(dockerVersion.version, 64),
  };
}

async function orNull<T>(promise: Promise<T>): Promise<T | null> {
  try {
    return await promise;
  } catch {
    return null;
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}
