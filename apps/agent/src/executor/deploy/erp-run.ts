// A one-off container of an ERP image with the environment's mounts (erp-files.ts erpBinds:
// its configuration, data dir, code and Python layer), run to its end with its output in the
// step log: a new database's -i base and module installs and upgrades (phases/modules.ts),
// `odoo neutralize` on a copy (../backup/neutralize.ts). Odoo's ERROR and CRITICAL lines are logged as warnings.
import { randomBytes } from "node:crypto";
import type { DockerClient } from "../../docker/docker-client.ts";
import type { RunResult } from "../../docker/workloads.ts";
import type { EnvironmentLayout } from "../environment/environment-layout.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { erpBinds } from "./erp-files.ts";
import { erpEnvironment } from "./python-layer.ts";

/** Whether a line of Odoo's log is an error (its level is ERROR or CRITICAL). */
export function isOdooError(line: string): boolean {
  return / (ERROR|CRITICAL) /.test(line);
}

export interface ErpRun {
  layout: EnvironmentLayout;
  image: string;
  cmd: string[];
  /** Must include the environment's labels (role erp-run). */
  labels: Record<string, string>;
  /** The deploy's variables; absent: none. */
  env?: Record<string, string>;
  nanoCpus?: number;
  memoryBytes?: number;
  /** Prefixes each logged line ("modules: …"). */
  what: string;
}

/** Runs it; a cancel (the signal) throws once the container is gone. `watch` sees every line. */
export async function runErpOnce(
  docker: DockerClient,
  run: ErpRun,
  options: { deadlineMs: number; signal: AbortSignal; log: StepScope["log"]; watch?: (line: string) => void },
): Promise<RunResult> {
  const result = await docker.runToCompletion(
    {
      name: `${run.layout.erpContainer}-run-${randomBytes(4).toString("hex")}`,
      image: run.image,
      labels: run.labels,
      env: erpEnvironment(run.env ?? {}),
      cmd: run.cmd,
      network: run.layout.network,
      binds: erpBinds(run.layout),
      ...(run.nanoCpus === undefined ? {} : { nanoCpus: run.nanoCpus }),
      ...(run.memoryBytes === undefined ? {} : { memoryBytes: run.memoryBytes }),
    },
    {
      deadlineMs: options.deadlineMs,
      signal: options.signal,
      tailLines: 30,
      onLine: (line) => {
        options.watch?.(line);
        if (line.trim() !== "") options.log(isOdooError(line) ? "warning" : "info", `${run.what}: ${line}`);
      },
    },
  );
  options.signal.throwIfAborted();
  return result;
}
