// A restore's new data dir (data-restore-<id>, beside the live one) is written through a
// helper container of the ERP's image that mounts it where the ERP mounts its data dir and is
// never started: Docker writes the files with the owners their archive gives them, as the ERP
// will read them. The image is named by the caller: a restore takes the running ERP's, a
// deploy its own (it may have no ERP container yet).
import { chown, mkdir } from "node:fs/promises";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentLabels } from "../../docker/labels.ts";
import type { RestoreNames } from "../environment/database-swap.ts";
import { ERP_UID, type EnvironmentLayout } from "../environment/environment-layout.ts";

/** Creates the new data dir and the helper mounting it at /var/lib/odoo, runs `write` with the helper's id, removes the helper. */
export async function writeIntoIncomingDataDir(
  docker: DockerClient,
  layout: EnvironmentLayout,
  image: string,
  names: RestoreNames,
  extraLabels: Record<string, string> | undefined,
  write: (helperId: string) => Promise<void>,
): Promise<void> {
  await mkdir(names.incomingDir, { mode: 0o750 });
  await chown(names.incomingDir, ERP_UID, ERP_UID).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EPERM") throw error;
  });
  const helper = await docker.createContainer({
    name: `${layout.erpContainer}-restore-${names.id}`,
    image,
    // Role erp: a helper left by a crash is removed with the environment's previous ERP containers.
    labels: environmentLabels(layout.environmentId, "erp", extraLabels),
    cmd: ["true"],
    network: layout.network,
    binds: [`${names.incomingDir}:/var/lib/odoo`],
    restartPolicy: "no",
  });
  try {
    await write(helper);
  } finally {
    await docker.removeContainer(helper);
  }
}
