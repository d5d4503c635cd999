// Step generating_config: odoo.conf for this deploy, readable by the image's user. What it
// replaced is kept: a rollback, or the old ERP started again, runs with it.
import { readFile } from "node:fs/promises";
import { writeFileAtomic } from "../../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../../state/state-dir.ts";
import { ERP_DB_NAME, ERP_DB_PORT, ERP_DB_USER } from "../../environment/environment-layout.ts";
import type { ErpUser } from "../../environment/erp-image-user.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import type { AddonsFolder } from "../addons-path.ts";
import { withoutDemo, type DeployContext } from "../deploy-context.ts";
import { renderOdooConf, type ErpSizing } from "../erp-config.ts";
import { adminPassword, readableByErp, readPassword } from "../erp-files.ts";
import { seriesOf } from "../erp-modules.ts";
import { catcherLogin } from "../../../mail/catcher-login.ts";

export async function generateConfig(
  { params, layout, deps }: DeployContext,
  input: { sizing: ErpSizing; addonsFolders: AddonsFolder[]; erpUser: ErpUser },
  step: StepScope,
): Promise<{ summary: string; previousConf: string | null }> {
  const { sizing } = input;
  const dbPassword = await readPassword(layout);
  /** odoo.conf as it was before this deploy wrote it (null: there was none). */
  const previousConf = await readFile(layout.configFile, "utf8").catch(() => null);
  const adminPasswd = params.admin_passwd ?? (await adminPassword(layout));
  const conf = renderOdooConf({
    series: seriesOf(params.erp_version),
    adminPasswd,
    withoutDemo: withoutDemo(params),
    dbHost: layout.dbContainer,
    dbPort: ERP_DB_PORT,
    dbUser: ERP_DB_USER,
    dbPassword,
    dbName: ERP_DB_NAME,
    sizing,
    proxyMode: params.domain !== null,
    addonsPath: input.addonsFolders.map((f) => f.container),
    mail: await catcherLogin(deps, params.environment_id, params.catch_mail),
  });
  writeFileAtomic(layout.configFile, conf, SECRET_FILE_MODE);
  await readableByErp(layout.configFile, input.erpUser, step);
  step.log("info", `Wrote ${layout.configFile}`, {
    workers: sizing.workers,
    limit_memory_soft: sizing.limit_memory_soft,
    limit_memory_hard: sizing.limit_memory_hard,
    db_host: layout.dbContainer,
  });
  return { summary: `odoo.conf written (workers ${sizing.workers})`, previousConf };
}
