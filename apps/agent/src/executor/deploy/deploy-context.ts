// What every phase of a deploy reads and none changes: the command, where the environment
// lives, the Docker client, the timings. What a phase makes is its return value (deploy.ts).
import type { DeployParams } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { DEFAULT_DB_IMAGE, type EnvironmentLayout } from "../environment/environment-layout.ts";
import type { ExecutorDeps, ExecutorTiming } from "../runner/executor-deps.ts";

export interface DeployContext {
  readonly kind: "deploy" | "redeploy";
  readonly params: DeployParams;
  readonly deps: ExecutorDeps;
  readonly docker: DockerClient;
  readonly layout: EnvironmentLayout;
  readonly timing: ExecutorTiming;
  /** Labels on every object the deploy creates (tests mark theirs). */
  readonly extraLabels: Readonly<Record<string, string>>;
  /** The names routed to the ERP: the domain, then its aliases (none without a domain). */
  readonly names: string[];
}

/** A new database gets no demo data unless asked. */
export function withoutDemo(params: DeployParams): boolean {
  return params.init?.without_demo ?? true;
}

export function dbImageOf(params: DeployParams): string {
  return params.db_image ?? DEFAULT_DB_IMAGE;
}
