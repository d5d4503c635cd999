// The ERP container of an environment: its image (local first, pulled otherwise), finding
// it by its labels, and replacing it on a redeploy so that a new container which cannot
// be created or started leaves the previous one running.
import type { ContainerSpec } from "../../docker/workloads.ts";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentFilter, isEnvironmentObject } from "../../docker/labels.ts";
import { ERP_HTTP_PORT, type EnvironmentLayout } from "./environment-layout.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";

/** Uses the local image when present, else pulls it; a clear error when neither works. */
export async function ensureImage(docker: DockerClient, ref: string, scope: Pick<StepScope, "log">): Promise<"local" | "pulled"> {
  if (await docker.imageExists(ref)) {
    scope.log("info", `Image ${ref} is present locally`);
    return "local";
  }
  scope.log("info", `Image ${ref} is not present locally: pulling it`);
  try {
    await docker.pullImage(ref);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CommandError("image_unavailable", `image ${ref} not found locally and could not be pulled: ${reason}`);
  }
  scope.log("info", `Pulled image ${ref}`);
  return "pulled";
}

export interface ErpContainerRef {
  id: string;
  name: string;
  state: string;
}

/** The environment's ERP container (the one with the canonical name first), or null. */
export async function findErpContainer(docker: DockerClient, layout: EnvironmentLayout): Promise<ErpContainerRef | null> {
  const all = await docker.listContainers(environmentFilter(layout.environmentId, "erp"));
  const chosen = all.find((c) => c.name === layout.erpContainer) ?? [...all].sort((a, b) => b.created - a.created)[0];
  return chosen === undefined ? null : { id: chosen.id, name: chosen.name, state: chosen.state };
}

export async function requireErpContainer(docker: DockerClient, layout: EnvironmentLayout): Promise<ErpContainerRef> {
  const erp = await findErpContainer(docker, layout);
  if (erp === null) {
    throw new CommandError(
      "not_deployed",
      `environment ${layout.environmentId} has no ERP container on this server: deploy it first`,
    );
  }
  return erp;
}

/** The host port Docker chose for 8069 (it changes on every start), or null. */
export async function hostPortOf(docker: DockerClient, containerId: string): Promise<number | null> {
  const details = await docker.inspectContainer(containerId);
  const port = details?.hostPorts[ERP_HTTP_PORT];
  return port ? Number(port) : null;
}

/** For the health check: null while the container runs, else why it stopped, with its last log lines. */
export function stoppedReason(docker: DockerClient, containerId: string): () => Promise<string | null> {
  return async () => {
    const details = await docker.inspectContainer(containerId);
    if (details === null) return "the container no longer exists";
    if (details.running) return null;
    const logs = await docker.containerLogs(containerId, 15).catch(() => "");
    return `the container ${details.state} with exit code ${details.exitCode}${logs ? `; last log lines:\n${logs.trim()}` : ""}`;
  };
}

/**
 * Starts `spec` as the environment's ERP container in place of any previous one: the old
 * one is renamed aside, stopped only once the new one exists, and put back if the new one
 * does not start. Previous containers are removed once the new one runs.
 */
export async function replaceErpContainer(
  docker: DockerClient,
  layout: EnvironmentLayout,
  spec: ContainerSpec,
  scope: Pick<StepScope, "log">,
  options: { graceSeconds: number; suffix: string; keepPrevious?: boolean },
): Promise<string> {
  const sameName = await docker.inspectContainer(layout.erpContainer);
  if (sameName !== null && !isEnvironmentObject(sameName.labels, layout.environmentId)) {
    throw new CommandError("name_conflict", `container ${layout.erpContainer} exists but is not this environment's: Berth leaves it alone`);
  }
  const previous = await docker.listContainers(environmentFilter(layout.environmentId, "erp"));
  const current = previous.find((c) => c.name === layout.erpContainer);
  const parkedName = `${layout.erpContainer}-previous-${options.suffix}`;
  if (current !== undefined) await docker.renameContainer(current.id, parkedName);

  const putBack = async () => {
    if (current === undefined) return;
    await docker.renameContainer(current.id, layout.erpContainer);
    if (current.state === "running") await docker.startContainer(current.id);
    scope.log("warning", `The previous ERP container ${layout.erpContainer} was put back`);
  };

  let id: string;
  try {
    id = await docker.createContainer(spec);
  } catch (error) {
    await putBack().catch(() => undefined);
    throw error;
  }
  scope.log("info", `Created ERP container ${spec.name} from ${spec.image}`);
  if (current?.state === "running") {
    await docker.stopContainer(current.id, options.graceSeconds);
    scope.log("info", `Stopped the previous ERP container`);
  }
  try {
    await docker.startContainer(id);
  } catch (error) {
    await docker.removeContainer(id).catch(() => undefined);
    await putBack().catch(() => undefined);
    const reason = error instanceof Error ? error.message : String(error);
    throw new CommandError("container_start_failed", `the new ERP container did not start: ${reason}`);
  }
  if (options.keepPrevious === true && current !== undefined) {
    scope.log("info", `The previous ERP container is kept as ${parkedName} until the new one is healthy`);
    for (const old of previous.filter((c) => c.id !== current.id)) await docker.removeContainer(old.id);
    return id;
  }
  for (const old of previous) {
    await docker.removeContainer(old.id);
    scope.log("info", `Removed the previous ERP container ${old.id.slice(0, 12)}`);
  }
  return id;
}

/** The ERP containers of the environment other than `currentId` (parked by replaceErpContainer). */
export async function parkedErpContainers(docker: DockerClient, layout: EnvironmentLayout, currentId: string): Promise<string[]> {
  const all = await docker.listContainers(environmentFilter(layout.environmentId, "erp"));
  return all.filter((c) => c.id !== currentId).map((c) => c.id);
}

/**
 * Undoes replaceErpContainer with keepPrevious: the new container is removed and the parked
 * one gets its name back, stopped (the caller starts it once code and data are back).
 */
export async function putBackPrevious(
  docker: DockerClient,
  layout: EnvironmentLayout,
  newId: string,
  scope: Pick<StepScope, "log">,
  graceSeconds: number,
): Promise<string | null> {
  const parked = (await docker.listContainers(environmentFilter(layout.environmentId, "erp")))
    .filter((c) => c.id !== newId)
    .sort((a, b) => b.created - a.created)[0];
  await docker.stopContainer(newId, graceSeconds).catch(() => undefined);
  await docker.removeContainer(newId);
  if (parked === undefined) return null;
  await docker.renameContainer(parked.id, layout.erpContainer);
  scope.log("warning", `The new ERP container was removed; the previous one is ${layout.erpContainer} again`);
  return parked.id;
}
