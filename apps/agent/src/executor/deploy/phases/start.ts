// Step starting_container, once the database is ready (database.ts): the administrator's
// password, then the switch: the ERP container replaced by one of the new image. The
// previous one is kept (parked) while this deploy could still go back to it.
import { environmentLabels } from "../../../docker/labels.ts";
import { ERP_HTTP_PORT } from "../../environment/environment-layout.ts";
import { hostPortOf, parkedErpContainers, replaceErpContainer } from "../../environment/erp-container.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import type { DeployContext } from "../deploy-context.ts";
import type { ErpSizing } from "../erp-config.ts";
import { erpBinds } from "../erp-files.ts";
import { setAdministratorPassword } from "../erp-login.ts";
import { erpEnvironment } from "../python-layer.ts";
import type { Database } from "./database.ts";

export interface StartedErp {
  containerId: string;
  hostPort: number | null;
  /** The administrator's password this deploy set (login, and the version it was sent with). */
  adminLogin: { login: string; version: string } | null;
}

export async function startErp(
  c: DeployContext,
  input: { sizing: ErpSizing; dbContainerId: string; db: Pick<Database, "previous" | "migration" | "snapshot"> },
  step: StepScope,
): Promise<StartedErp & { summary: string }> {
  const { docker, params, layout, timing } = c;
  const { sizing, db } = input;
  const { migration } = db;
  let adminLogin: StartedErp["adminLogin"] = null;
  if (params.admin_login !== undefined && migration !== null) {
    // A migrated database has its own users; the control plane sends none for it anyway.
    step.log("info", "The administrator's password was not set: the database was restored from a migration's backup and keeps its own users");
  } else if (params.admin_login !== undefined) {
    const login = await setAdministratorPassword(docker, input.dbContainerId, params.admin_login.password);
    if (login === null) step.log("warning", "The database has no administrator (user 2): the administrator's password was not set");
    else {
      adminLogin = { login, version: params.admin_login.version };
      step.log("info", `The administrator's password (login ${login}) was set in the database`);
    }
  }
  migration?.markRestarting(step);
  const containerId = await replaceErpContainer(
    docker,
    layout,
    {
      name: layout.erpContainer,
      image: params.image,
      labels: environmentLabels(layout.environmentId, "erp", {
        ...c.extraLabels,
        "berth.deployment_id": params.deployment_id,
        "berth.erp_version": params.erp_version,
      }),
      env: erpEnvironment(params.env),
      network: layout.network,
      binds: erpBinds(layout),
      publishLoopback: [ERP_HTTP_PORT],
      nanoCpus: sizing.nano_cpus,
      memoryBytes: sizing.memory_bytes,
      restartPolicy: "unless-stopped",
    },
    step,
    { graceSeconds: timing.stopGraceSeconds, suffix: params.deployment_id.slice(0, 8), keepPrevious: db.snapshot !== null || migration?.keepsPreviousErp === true },
  );
  const hostPort = await hostPortOf(docker, containerId);
  await db.previous.switched(step.log);
  return { summary: `ERP container ${layout.erpContainer} started; port 8069 on 127.0.0.1:${hostPort ?? "?"}`, containerId, hostPort, adminLogin };
}

/** The previous ERP containers, kept by the switch while this deploy could still go back to them. */
export async function removeParkedErps({ docker, layout }: DeployContext, containerId: string, step: StepScope): Promise<void> {
  for (const id of await parkedErpContainers(docker, layout, containerId)) {
    await docker.removeContainer(id);
    step.log("info", `Removed the previous ERP container ${id.slice(0, 12)}`);
  }
}
