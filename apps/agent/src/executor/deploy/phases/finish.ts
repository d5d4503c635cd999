// Step completed: what this deploy replaced is dropped (the previous checkouts, a restore's
// previous data, the parked ERP), the module state recorded; then the command's result.
import { listSnapshots } from "../../environment/pre-deploy-snapshot.ts";
import type { JsonObject } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import { addonReposDir } from "../addon-repositories.ts";
import { withoutDemo, type DeployContext } from "../deploy-context.ts";
import { writeModuleState } from "../erp-modules.ts";
import { dropPreviousCheckout } from "../git-checkout.ts";
import type { Code } from "./code.ts";
import type { Database } from "./database.ts";
import { removeParkedErps, type StartedErp } from "./start.ts";

export async function complete(c: DeployContext, input: { db: Database; containerId: string }, step: StepScope): Promise<{ summary: string }> {
  const { layout, kind } = c;
  const { db } = input;
  await dropPreviousCheckout(layout.addonsDir);
  await dropPreviousCheckout(addonReposDir(layout.dir));
  // As read after the module run: starting the ERP installs and upgrades nothing.
  if (db.modulesAfter !== null) writeModuleState(layout, db.addons, db.modulesAfter);
  // The old ERP stays parked until the restore is committed: until then a failure swaps back to it.
  if (db.migration !== null && (await db.migration.commit(step.log))) await removeParkedErps(c, input.containerId, step);
  step.log("info", `${kind === "redeploy" ? "Redeployment" : "Deployment"} finished`);
  return { summary: "Done" };
}

/** The command's result (command.result.result). */
export async function deployResult(
  { params, layout, names }: DeployContext,
  done: { code: Code; db: Database; erp: StartedErp; healthy: boolean },
): Promise<JsonObject> {
  const { code, db, erp } = done;
  return {
    container_id: erp.containerId,
    container_name: layout.erpContainer,
    image: params.image,
    host_port: erp.hostPort,
    commit: code.commit,
    /** The commit of each add-on repository, so retry and rollback check out the same. */
    addon_repositories: code.addonCheckouts.map((r) => ({ id: r.id, level: r.level, name: r.name, branch: r.branch, commit: r.commit })),
    db_volume: layout.dbVolume,
    db_container: layout.dbContainer,
    healthy: done.healthy,
    urls: names.map((n) => `https://${n}`),
    database: { initialized: db.initialized, without_demo: withoutDemo(params), language: params.init?.language ?? null },
    modules: db.modules,
    /** The modules' tests (development builds, staging that requires them); null: none ran. */
    tests: db.tests,
    snapshot_id: db.snapshot?.backup_id ?? null,
    admin_login: erp.adminLogin,
    backups: (await listSnapshots(layout)).map(({ backup_id, kind, created_at, deployment_id, database, path, size_bytes }) => ({
      backup_id,
      kind,
      created_at,
      deployment_id,
      database,
      path,
      size_bytes,
    })),
    rolled_back_to: null,
    ...(db.migration === null ? {} : { migration_restore: db.migration.result() }),
  };
}
