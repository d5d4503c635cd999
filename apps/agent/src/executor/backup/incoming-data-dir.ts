// A restore's new data dir (data-restore-<id>, beside the live one) is written through a
// helper container of the ERP's image that mounts it where the ERP mounts its data dir and is
// never started: Docker writes the files with the owners their archive gives them, as the ERP
// will read them. The image is named by the caller: a restore takes the running ERP's, a
// deploy its own (it may have no ERP container yet).
import { chown, mkdir } from "node:fs/promises";
import type { DockerClient } from "../../docker/docker-client.ts";
import { environmentLabels } from "../../docker/labels.ts";
import type { RestoreNames } from "../environment/database-swap.ts";
import type { EnvironmentLayout } from "../environment/environment-layout.ts";
import { chownTree, erpUserOf, type ErpUser } from "../environment/erp-image-user.ts";

/**
 * Creates the new data dir (owned by the image's user) and the helper mounting it at
 * /var/lib/odoo, runs `write` with the helper's id and that user, removes the helper.
 */
export async function writeIntoIncomingDataDir(
  docker: DockerClient,
  layout: EnvironmentLayout,
  image: string,
  names: RestoreNames,
  extraLabels: Record<string, string> | undefined,
  write: (helperId: string, user: ErpUser) => Promise<void>,
): Promise<void> {
  const user = await erpUserOf(docker, image);
  await mkdir(names.incomingDir, { mode: 0o750 });
  await chown(names.incomingDir, user.uid, user.gid).catch((error: NodeJS.ErrnoException) => {
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
    await write(helper, user);
    // What the archive brought (a backup made under another image's user) belongs to this image's.
    await chownTree(names.incomingDir, user).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EPERM") throw error;
    });
  } finally {
    await docker.removeContainer(helper);
  }
}
