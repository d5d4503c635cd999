// Steps initializing, connecting, creating_network and creating_postgres: the environment's
// folder and the ERP's sizing, Docker reachable, the environment's own network, its PostgreSQL.
import { mkdir } from "node:fs/promises";
import { environmentLabels, isEnvironmentObject } from "../../../docker/labels.ts";
import { STATE_DIR_MODE } from "../../../state/state-dir.ts";
import { ensurePostgres } from "../../environment/postgres.ts";
import { CommandError } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import { dbImageOf, type DeployContext } from "../deploy-context.ts";
import { sizeErp, type ErpSizing } from "../erp-config.ts";
import { redactUrl } from "../git-checkout.ts";

export async function initialize({ kind, params, layout }: DeployContext, step: StepScope): Promise<{ summary: string; sizing: ErpSizing }> {
  step.log("info", `${kind === "redeploy" ? "Redeploying" : "Deploying"} ERP ${params.erp_version} (${params.image})`, {
    environment_id: params.environment_id,
    image: params.image,
    db_image: dbImageOf(params),
    resources: params.resources,
    git: params.git === null ? null : { url: redactUrl(params.git.url), branch: params.git.branch, commit: params.git.commit },
    domain: params.domain,
    // Values may be secrets: only the names are logged.
    env_names: Object.keys(params.env).sort(),
  });
  const sizing = sizeErp(params.resources);
  for (const warning of sizing.warnings) step.log("warning", `Sizing: ${warning}`);
  await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
  return { summary: `Environment ${params.environment_id} prepared`, sizing };
}

export async function connect({ docker }: DeployContext): Promise<{ summary: string }> {
  const version = await docker.version();
  return { summary: `Docker ${version.version} (API ${version.api_version}) reachable` };
}

export async function createNetwork({ docker, layout, extraLabels }: DeployContext, step: StepScope): Promise<{ summary: string }> {
  const existing = await docker.findNetwork(layout.network);
  if (existing !== null) {
    if (!isEnvironmentObject(existing.labels, layout.environmentId)) {
      throw new CommandError("name_conflict", `network ${layout.network} exists but is not this environment's: Berth leaves it alone`);
    }
    return { summary: `Network ${layout.network} exists` };
  }
  await docker.createNetwork(layout.network, environmentLabels(layout.environmentId, "network", extraLabels));
  step.log("info", `Created isolated bridge network ${layout.network}`);
  return { summary: `Network ${layout.network} created` };
}

export async function createPostgres(c: DeployContext, step: StepScope): Promise<{ summary: string; dbContainerId: string }> {
  const db = await ensurePostgres(c.docker, c.layout, step, {
    image: dbImageOf(c.params),
    extraLabels: c.extraLabels,
    readyTimeoutMs: c.timing.dbReadyTimeoutMs,
    clock: c.deps.clock,
  });
  return { summary: `PostgreSQL ${c.layout.dbContainer} accepts connections`, dbContainerId: db.containerId };
}
