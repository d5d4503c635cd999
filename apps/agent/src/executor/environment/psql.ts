// SQL on an environment's PostgreSQL as its superuser (ERP_DB_USER), as an argument vector
// through docker exec on the container's local socket: no password, no port, no shell.
import type { DockerClient } from "../../docker/docker-client.ts";
import { CommandError } from "../runner/handler-types.ts";
import { ERP_DB_USER } from "./environment-layout.ts";

/** Runs SQL (ON_ERROR_STOP, unaligned, tuples only) and returns its output lines. */
export async function psql(
  docker: DockerClient,
  dbContainerId: string,
  sql: string,
  options: { database?: string; deadlineMs?: number; code?: string } = {},
): Promise<string[]> {
  const result = await docker.exec(
    dbContainerId,
    ["psql", "-U", ERP_DB_USER, "-d", options.database ?? "postgres", "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t", "-c", sql],
    { deadlineMs: options.deadlineMs ?? 60_000 },
  );
  if (result.exitCode !== 0) {
    throw new CommandError(options.code ?? "database_failed", `psql failed (exit code ${result.exitCode}): ${result.stderr.trim()}`);
  }
  return result.stdout.split("\n").filter((line) => line !== "");
}

/** The PostgreSQL server's major version (15 for 150004); undefined when it cannot be read. */
export async function serverMajor(docker: DockerClient, dbContainerId: string): Promise<number | undefined> {
  const [version = ""] = await psql(docker, dbContainerId, "SHOW server_version_num", { deadlineMs: 30_000 }).catch(() => []);
  const major = Math.floor(Number(version) / 10_000);
  return Number.isFinite(major) && major > 0 ? major : undefined;
}
