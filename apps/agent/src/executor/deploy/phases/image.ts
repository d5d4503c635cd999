// Step pulling_image: the image, the user it runs as, the data dir and the Python layer
// ready for it, the requirements installed into the layer before any ERP process of this
// deploy runs; step installing_dependencies reports that install.
import { randomBytes } from "node:crypto";
import { environmentLabels } from "../../../docker/labels.ts";
import { ensureImage } from "../../environment/erp-container.ts";
import { erpUserOf, type ErpUser } from "../../environment/erp-image-user.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import { ADDON_REPOS_MOUNT, addonReposDir } from "../addon-repositories.ts";
import type { DeployContext } from "../deploy-context.ts";
import { prepareDataDir } from "../erp-files.ts";
import { installIntoLayer, preparePythonLayer, type LayerInstall } from "../python-layer.ts";

export interface Image {
  /** The user the deploy's image runs as (read from the image). */
  erpUser: ErpUser;
  /** The requirements' install (null: there were none). */
  pythonLayer: LayerInstall | null;
}

export async function pullImage(c: DeployContext, requirementFiles: string[], step: StepScope): Promise<Image & { summary: string }> {
  const { docker, params, layout, timing } = c;
  const source = await ensureImage(docker, params.image, step);
  // The image's own user (16.0/17.0: 101, 18.0/19.0: 100), never assumed: its files must be readable by it.
  const user = await erpUserOf(docker, params.image);
  step.log("info", `The image runs as uid ${user.uid}, gid ${user.gid}`, { uid: user.uid, gid: user.gid });
  await prepareDataDir(layout.dataDir, user, step);
  await preparePythonLayer(layout.dir, user, (message) => step.log("info", message));
  // Before any ERP process of this deploy runs: a module install may import them.
  const pythonLayer =
    requirementFiles.length === 0
      ? null
      : await installIntoLayer(
          docker,
          {
            name: `${layout.erpContainer}-pip-${randomBytes(4).toString("hex")}`,
            image: params.image,
            user,
            labels: environmentLabels(layout.environmentId, "erp-run", { ...c.extraLabels, "berth.deployment_id": params.deployment_id }),
            network: layout.network,
            environmentDir: layout.dir,
            // The code only: odoo.conf is written later (generating_config).
            binds: [`${layout.addonsDir}:/mnt/extra-addons:ro`, `${addonReposDir(layout.dir)}:${ADDON_REPOS_MOUNT}:ro`],
            files: requirementFiles,
          },
          { deadlineMs: timing.dataTransferMs, signal: step.signal, log: (level, message) => step.log(level, message) },
        );
  return { summary: source === "local" ? `Using local image ${params.image}` : `Pulled ${params.image}`, erpUser: user, pythonLayer };
}

/** installing_dependencies: installed by pulling_image into the Python layer, before the ERP of this deploy started. */
export async function reportDependencies(pythonLayer: LayerInstall | null, step: StepScope): Promise<{ summary: string }> {
  if (pythonLayer === null) {
    step.log("info", "No requirements.txt in the repository or its add-on repositories: nothing to install");
    return { summary: "Nothing to install" };
  }
  step.log(pythonLayer.installed ? "info" : "warning", pythonLayer.summary);
  return { summary: pythonLayer.summary };
}
