// Inside step starting_container, before the switch: the database this deploy's ERP will
// run on. A migration's backup is restored (migration-restore.ts), a new database is
// initialised with -i base, then the modules are planned and run (modules.ts). The old ERP
// keeps serving meanwhile, except while modules are upgraded after a snapshot
// (previous-erp.ts). Step initializing_database then reports what was done.
import { mailToCatcher } from "../../environment/mail-to-catcher.ts";
import { ERP_DB_NAME } from "../../environment/environment-layout.ts";
import { findErpContainer } from "../../environment/erp-container.ts";
import { erpUserOfContainer, type ErpUser } from "../../environment/erp-image-user.ts";
import type { PreDeploySnapshot } from "../../environment/pre-deploy-snapshot.ts";
import { CommandError } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import { PROJECT_ADDONS_MOUNT, scanAddonFolders, type AddonsFolder } from "../addons-path.ts";
import { withoutDemo, type DeployContext } from "../deploy-context.ts";
import type { ErpSizing } from "../erp-config.ts";
import { applyCountry } from "../erp-country.ts";
import { erpCommand, readDbModules, seriesOf, type AddonModule, type DbModule, type ModuleOutcome } from "../erp-modules.ts";
import { createMigrationRestore, type MigrationRestore } from "../migration-restore.ts";
import { createPreviousErp, type PreviousErp } from "../previous-erp.ts";
import type { DeployProgress } from "../rollback-policy.ts";
import type { TestsResult } from "../module-tests.ts";
import { runErp, runModules } from "./modules.ts";

export interface Database {
  previous: PreviousErp;
  migration: MigrationRestore | null;
  addons: AddonModule[];
  /** The database was initialised by this deploy. */
  initialized: boolean;
  modules: ModuleOutcome[];
  snapshot: PreDeploySnapshot | null;
  /** The database's modules once this deploy's module run (if any) is done (null: not readable after it). */
  modulesAfter: DbModule[] | null;
  /** The modules' tests this deploy ran (null: none). */
  tests: TestsResult | null;
}

export async function prepareDatabase(
  c: DeployContext,
  input: { sizing: ErpSizing; dbContainerId: string; addonsFolders: AddonsFolder[]; erpUser: ErpUser; previousConf: string | null },
  progress: DeployProgress,
  step: StepScope,
): Promise<Database> {
  const { docker, params, layout, deps, timing } = c;
  const { dbContainerId: dbId, sizing } = input;
  const oldErpId = (await findErpContainer(docker, layout))?.id ?? null;
  progress.oldErpId = oldErpId;
  const previousErpUser = oldErpId === null ? null : await erpUserOfContainer(docker, oldErpId);
  const previous = createPreviousErp(
    { docker, layout, proxy: deps.proxy, clock: deps.clock, stopGraceSeconds: timing.stopGraceSeconds, dataTransferMs: timing.dataTransferMs },
    { previousConf: input.previousConf, dbContainerId: dbId, erpUser: input.erpUser, previousErpUser },
  );
  progress.previous = previous;
  const migration =
    params.archive === undefined
      ? null
      : createMigrationRestore(
          {
            ...deps,
            docker,
            layout,
            image: params.image,
            baseUrl: params.domain === null ? null : `https://${params.domain}`,
            catchMail: params.catch_mail === true,
            previous,
            dataTransferMs: timing.dataTransferMs,
            stopGraceSeconds: timing.stopGraceSeconds,
          },
          params.archive,
        );
  progress.migration = migration;
  const series = seriesOf(params.erp_version);
  const addons = await scanAddonFolders(input.addonsFolders, series);
  if (migration !== null) await migration.restore(step, dbId, oldErpId);
  let initialized = false;
  let before = await readDbModules(docker, dbId);
  if (before === null && migration?.restored === true) {
    // Never -i base on a restored database: it is the migrated ERP's, as it was.
    step.log("warning", "The restored database has no installed base module: modules are left as they are");
    before = [];
  }
  if (before === null) {
    const language = params.init?.language;
    step.log("info", `New database: initialising "${ERP_DB_NAME}" (-i base${withoutDemo(params) ? ", without demo data" : ""}${language ? `, language ${language}` : ""}) before the ERP serves`);
    const cmd = erpCommand({ series, init: ["base"], withoutDemo: withoutDemo(params), ...(language === undefined ? {} : { language }) });
    const run = await runErp(c, sizing, step, cmd, timing.erpInitTimeoutMs, "init");
    if (run.exitCode !== 0) {
      throw new CommandError(
        "database_init_failed",
        `the ERP could not initialise the database (${run.killed ? `not done within ${timing.erpInitTimeoutMs / 60_000} min` : `exit code ${run.exitCode}`}); last lines:\n${run.tail.slice(-15).join("\n")}`,
      );
    }
    initialized = true;
    before = await readDbModules(docker, dbId);
    if (before === null) throw new CommandError("database_init_failed", "the ERP exited without installing base");
    const country = params.init?.country;
    if (country !== undefined) await applyCountry(docker, dbId, country, step.log);
  }
  // A database this deploy just initialised or restored has nothing a snapshot would keep: a failure swaps back.
  const snapshotWorthless = initialized || migration?.restored === true;
  // A development build installs the project repository's own modules (not the add-on repositories').
  const projectModules = params.tests ? (await scanAddonFolders(input.addonsFolders.filter(isProjectFolder), series)).filter((m) => m.installable).map((m) => m.name) : [];
  const ran = await runModules(c, { sizing, dbContainerId: dbId, addons, before, projectModules, snapshotWorthless, previous }, progress, step);
  // A staging or development ERP's mail goes to the catcher: no mail server of its database may be on.
  if (params.catch_mail === true) step.log("info", await mailToCatcher(docker, dbId, ERP_DB_NAME));
  return { previous, migration, addons, initialized, ...ran };
}

function isProjectFolder(folder: AddonsFolder): boolean {
  return folder.container === PROJECT_ADDONS_MOUNT || folder.container.startsWith(`${PROJECT_ADDONS_MOUNT}/`);
}

/** initializing_database: what prepareDatabase did, before the switch. */
export async function reportDatabase({ params }: DeployContext, db: Database, step: StepScope): Promise<{ summary: string }> {
  const { migration } = db;
  const done = db.modules.map((m) => `${m.name} ${m.action}${m.to_version ? ` (${m.to_version})` : ""}`);
  if (migration?.restored === true) {
    step.log("info", `Database "${ERP_DB_NAME}" was restored from migration ${params.archive?.migration_id ?? ""}'s backup before the ERP started`);
  } else if (db.initialized) {
    step.log("info", `Database "${ERP_DB_NAME}" was initialised before the ERP started (base${withoutDemo(params) ? ", no demo data" : ", demo data"})`);
  } else step.log("info", "Existing database kept (volume reused)");
  if (db.snapshot) step.log("info", `Pre-deploy snapshot ${db.snapshot.backup_id}`, { backup_id: db.snapshot.backup_id });
  if (done.length > 0) step.log("info", `Modules: ${done.join(", ")}`, { modules: db.modules });
  const head = migration?.restored === true ? "Database restored" : db.initialized ? "Database initialised" : "Existing database kept";
  return { summary: done.length > 0 ? `${head}; ${done.length} module(s) installed or upgraded` : head };
}
