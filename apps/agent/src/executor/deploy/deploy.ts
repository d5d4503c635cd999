// deploy and redeploy: the 17 steps of platform spec 2.2 with real Docker objects. The
// database volume and the data dir are created once and kept by every later deploy; the
// ERP container is replaced. The final health check is non-fatal (spec 4.1 rule 7), except
// after a module upgrade, when an unhealthy ERP is rolled back to the pre-deploy snapshot.
//
// The database work happens before the switch: the step ids and their order are fixed by
// the spec, and initializing_database comes after starting_container, so starting_container
// first prepares the database (a new one is initialised with -i base; otherwise the modules
// to install or upgrade are computed, a pre-deploy snapshot taken and the modules run), each
// in a one-off container of the new image with --stop-after-init, and only then replaces the
// container. The old ERP keeps serving, except while modules are upgraded after a snapshot
// (previous-erp.ts: no write may be lost by a rollback). initializing_database reports what
// was done. A deploy that carries a migration's backup (params.archive) restores it there
// instead of initialising a new database (migration-restore.ts), then plans modules as for
// an existing database.
import { mkdir, readFile } from "node:fs/promises";
import { environmentLabels, isEnvironmentObject } from "../../docker/labels.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE, STATE_DIR_MODE } from "../../state/state-dir.ts";
import {
  DEFAULT_DB_IMAGE,
  ERP_DB_NAME,
  ERP_DB_PORT,
  ERP_DB_USER,
  ERP_HTTP_PORT,
  environmentLayout,
  type EnvironmentLayout,
} from "../environment/environment-layout.ts";
import { randomBytes } from "node:crypto";
import type { DeployParams } from "@berth/protocol";
import { ensureImage, findErpContainer, hostPortOf, parkedErpContainers, replaceErpContainer } from "../environment/erp-container.ts";
import {
  DEFAULT_PRE_DEPLOY_RETENTION,
  listSnapshots,
  pruneSnapshots,
  takeSnapshot,
  type PreDeploySnapshot,
} from "../environment/pre-deploy-snapshot.ts";
import {
  erpCommand,
  moduleLog,
  outcomes,
  planIsEmpty,
  planModules,
  readDbModules,
  readModuleState,
  scanAddons,
  seriesOf,
  writeModuleState,
  type AddonModule,
  type DbModule,
  type ModuleLog,
  type ModuleOutcome,
  type ModulePlan,
} from "./erp-modules.ts";
import { renderOdooConf, sizeErp, type ErpSizing } from "./erp-config.ts";
import { setAdministratorPassword } from "./erp-login.ts";
import { applyCountry } from "./erp-country.ts";
import { adminPassword, erpBinds, prepareDataDir, readableByErp, readPassword } from "./erp-files.ts";
import { runErpOnce } from "./erp-run.ts";
import { createPreviousErp } from "./previous-erp.ts";
import { createMigrationRestore } from "./migration-restore.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import {
  checkoutRepository,
  dropPreviousCheckout,
  emptyCheckout,
  redactUrl,
} from "./git-checkout.ts";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";
import { ADDON_REPOS_MOUNT, addonReposDir, knownHostsDir, stageAddonRepositories, type AddonCheckout, type AddonStaging } from "./addon-repositories.ts";
import { buildAddonsPath, requirementFiles, scanAddonFolders, type AddonsFolder } from "./addons-path.ts";
import { erpEnvironment, installIntoLayer, preparePythonLayer, type LayerInstall } from "./python-layer.ts";
import { erpUserOf, erpUserOfContainer, type ErpUser } from "../environment/erp-image-user.ts";
import { checkHealth } from "../environment/health-check.ts";
import { ensurePostgres } from "../environment/postgres.ts";
import { runSteps, type StepScope } from "../runner/step-runner.ts";
import { recordsToCreate, type DnsAnswer } from "../../proxy/dns-check.ts";
import { awaitCertificates, checkNames, routedNames, unroute } from "../environment/routing.ts";

interface DeployState {
  layout: EnvironmentLayout;
  sizing: ErpSizing;
  dbPassword: string;
  databaseIsNew: boolean;
  commit: string | null;
  hasRequirements: boolean;
  /** Add-on repositories being cloned (platform, organisation, environment), swapped in by cloning_repo. */
  staging: AddonStaging;
  addonCheckouts: AddonCheckout[];
  /** odoo.conf's addons_path, in precedence order. */
  addonsFolders: AddonsFolder[];
  requirementFiles: string[];
  pythonLayer: LayerInstall;
  containerId: string;
  hostPort: number | null;
  healthy: boolean;
  /** verifying_dns's answer per routed name. */
  dns: Record<string, DnsAnswer>;
  dbContainerId: string;
  /** odoo.conf as it was before this deploy wrote it (null: there was none). */
  previousConf: string | null;
  /** The database was initialised by this deploy. */
  initialized: boolean;
  addons: AddonModule[];
  dbModulesBefore: DbModule[];
  /** The database's modules once this deploy's module run (if any) is done: the ERP's start changes none. */
  dbModulesAfter: DbModule[];
  plan: ModulePlan | null;
  modules: ModuleOutcome[];
  snapshot: PreDeploySnapshot | null;
  /** Modules were run against the database: until the deploy succeeds, a failure rolls back. */
  modulesRan: boolean;
  /** The ERP container that served before this deploy. */
  oldErpId: string | null;
  /** The administrator's password this deploy set (login, and the version it was sent with). */
  adminLogin: { login: string; version: string };
  /** The old ERP, stopped by this deploy for its snapshot and kept stopped until the upgrade's outcome. */
  stoppedOldErp: string | null;
  rolledBack: boolean;
  /** The user the deploy's image runs as (read from the image). */
  erpUser: ErpUser;
  /** The user the previous ERP's image runs as. */
  previousErpUser: ErpUser | null;
}

export function createDeployHandler(deps: ExecutorDeps, kind: "deploy" | "redeploy"): CommandHandler<"deploy" | "redeploy"> {
  const timing = timingOf(deps);
  const extraLabels = deps.extraLabels ?? {};

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, kind, async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const dbImage = params.db_image ?? DEFAULT_DB_IMAGE;
      const s: Partial<DeployState> & Pick<DeployState, "layout" | "dns"> = { layout, commit: null, hasRequirements: false, dns: {} };
      const names = routedNames(params.domain, params.aliases);

      /** A one-off container of the new image, with the new code and configuration, output into the step log. */
      const runErp = (step: StepScope, cmd: string[], deadlineMs: number, what: string, watch?: ModuleLog) =>
        runErpOnce(
          docker,
          {
            layout,
            image: params.image,
            cmd,
            labels: environmentLabels(layout.environmentId, "erp-run", { ...extraLabels, "berth.deployment_id": params.deployment_id }),
            env: params.env,
            nanoCpus: need(s.sizing).nano_cpus,
            memoryBytes: need(s.sizing).memory_bytes,
            what,
          },
          { deadlineMs, signal: step.signal, log: step.log, ...(watch ? { watch: (line: string) => watch.line(line) } : {}) },
        );

      const previous = createPreviousErp(
        { docker, layout, proxy: deps.proxy, clock: deps.clock, stopGraceSeconds: timing.stopGraceSeconds, dataTransferMs: timing.dataTransferMs },
        s,
      );
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
                previous,
                dataTransferMs: timing.dataTransferMs,
                stopGraceSeconds: timing.stopGraceSeconds,
              },
              params.archive,
            );

      /** Before the switch: a new database is initialised; an existing one gets its modules installed and upgraded. */
      const prepareDatabase = async (step: StepScope) => {
        const dbId = need(s.dbContainerId);
        s.oldErpId = (await findErpContainer(docker, layout))?.id ?? null;
        s.previousErpUser = s.oldErpId === null ? null : await erpUserOfContainer(docker, s.oldErpId);
        const series = seriesOf(params.erp_version);
        s.addons = s.addonsFolders ? await scanAddonFolders(s.addonsFolders, series) : await scanAddons(layout.addonsDir, series);
        s.modules = [];
        s.snapshot = null;
        if (migration !== null) await migration.restore(step, dbId, s.oldErpId);
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
          const run = await runErp(step, cmd, timing.erpInitTimeoutMs, "init");
          if (run.exitCode !== 0) {
            throw new CommandError(
              "database_init_failed",
              `the ERP could not initialise the database (${run.killed ? `not done within ${timing.erpInitTimeoutMs / 60_000} min` : `exit code ${run.exitCode}`}); last lines:\n${run.tail.slice(-15).join("\n")}`,
            );
          }
          s.initialized = true;
          before = await readDbModules(docker, dbId);
          if (before === null) throw new CommandError("database_init_failed", "the ERP exited without installing base");
          const country = params.init?.country;
          if (country !== undefined) await applyCountry(docker, dbId, country, step.log);
        }
        s.dbModulesBefore = before;
        s.dbModulesAfter = before;
        const request = params.modules ?? { upgrade: "changed" as const };
        const plan = planModules(request, s.addons, before, await readModuleState(layout), series);
        s.plan = plan;
        if (planIsEmpty(plan)) {
          step.log("info", "Modules: nothing to install or upgrade");
          return;
        }
        for (const [name, reason] of Object.entries(plan.reasons)) step.log("info", `Module ${name}: ${plan.install.includes(name) ? "install" : "upgrade"} (${reason})`);
        // A database this deploy just restored has nothing a snapshot would keep: a failure swaps back.
        if (s.initialized !== true && migration?.restored !== true && deps.preDeploy?.snapshots !== false) {
          const modules = Object.fromEntries(before.filter((m) => m.state === "installed").map((m) => [m.name, m.latest_version]));
          s.snapshot = await takeSnapshot(docker, dbId, layout, {
            deploymentId: params.deployment_id,
            now: deps.clock.now(),
            modules,
            deadlineMs: timing.dataTransferMs,
            log: step.log,
            hooks: { stopErp: previous.stopForSnapshot(step.log) },
          });
          await pruneSnapshots(docker, dbId, layout, deps.preDeploy?.retention ?? DEFAULT_PRE_DEPLOY_RETENTION, step.log);
        }
        const cmd = erpCommand({ series, init: plan.install, update: plan.upgrade, withoutDemo: withoutDemo(params) });
        s.modulesRan = true;
        const odooLog = moduleLog();
        const run = await runErp(step, cmd, timing.moduleUpdateTimeoutMs, "modules", odooLog);
        const read = await readDbModules(docker, dbId);
        const after = read ?? [];
        s.dbModulesAfter = read ?? undefined;
        const failed = run.exitCode === 0 ? null : odooLog.failedModule();
        s.modules = outcomes(plan, before, after, { ok: run.exitCode === 0, failed, loaded: odooLog.loaded() }, { series, addons: s.addons });
        for (const m of s.modules) {
          step.log(m.action === "failed" ? "error" : "info", `Module ${m.name}: ${m.action}${m.to_version ? ` ${m.from_version ?? ""}${m.from_version ? " -> " : ""}${m.to_version}` : ""}`, { module: m });
        }
        if (run.exitCode !== 0) {
          const why = run.killed ? `not done within ${timing.moduleUpdateTimeoutMs / 60_000} min` : `exit code ${run.exitCode}`;
          // Odoo's own error lines (the traceback's exception included), else the last lines.
          const errors = odooLog.errorLines();
          const tail = (errors.length > 0 ? errors : run.tail.slice(-15)).join("\n");
          if (s.snapshot === null) {
            throw new CommandError("module_update_failed", `module ${failed ?? "install/upgrade"} failed (${why}); last lines:\n${tail}`);
          }
          const snapshot = s.snapshot;
          step.log("error", `Module ${failed ?? "install/upgrade"} failed (${why}): rolling code, configuration, database and file store back to ${snapshot.backup_id}`);
          await previous.rollback(step, null);
          throw new CommandError("module_update_failed", `module ${failed ?? "install/upgrade"} failed (${why}): rolled back to ${snapshot.backup_id}; last lines:\n${tail}`);
        }
      };

      /** The previous ERP containers, kept by the switch while this deploy could still go back to them. */
      const removeParkedErps = async (step: StepScope) => {
        for (const id of await parkedErpContainers(docker, layout, need(s.containerId))) {
          await docker.removeContainer(id);
          step.log("info", `Removed the previous ERP container ${id.slice(0, 12)}`);
        }
      };

      try {
        await runSteps(
          kind,
          ctx,
          {
            initializing: async (step) => {
              step.log("info", `${kind === "redeploy" ? "Redeploying" : "Deploying"} ERP ${params.erp_version} (${params.image})`, {
                environment_id: params.environment_id,
                image: params.image,
                db_image: dbImage,
                resources: params.resources,
                git: params.git === null ? null : { url: redactUrl(params.git.url), branch: params.git.branch, commit: params.git.commit },
                domain: params.domain,
                // Values may be secrets: only the names are logged.
                env_names: Object.keys(params.env).sort(),
              });
              s.sizing = sizeErp(params.resources);
              for (const warning of s.sizing.warnings) step.log("warning", `Sizing: ${warning}`);
              await mkdir(layout.dir, { recursive: true, mode: STATE_DIR_MODE });
              return `Environment ${params.environment_id} prepared`;
            },

            connecting: async () => {
              const version = await docker.version();
              return `Docker ${version.version} (API ${version.api_version}) reachable`;
            },

            creating_network: async (step) => {
              const existing = await docker.findNetwork(layout.network);
              if (existing !== null) {
                if (!isEnvironmentObject(existing.labels, layout.environmentId)) {
                  throw new CommandError("name_conflict", `network ${layout.network} exists but is not this environment's: Berth leaves it alone`);
                }
                return `Network ${layout.network} exists`;
              }
              await docker.createNetwork(layout.network, environmentLabels(layout.environmentId, "network", extraLabels));
              step.log("info", `Created isolated bridge network ${layout.network}`);
              return `Network ${layout.network} created`;
            },

            configuring_dns: async (step) => {
              if (names.length === 0) {
                step.log("info", "No domain: nothing to point at this server");
                return "No domain";
              }
              const expected = deps.proxy.publicAddresses();
              if (expected.length === 0) {
                step.log("warning", `This server's public address is not known (set BERTH_PUBLIC_ADDRESSES on the agent): point ${names.join(", ")} at it`);
                return "Public address unknown";
              }
              step.log("info", `Point ${names.join(", ")} at this server: ${names.map((n) => recordsToCreate(n, expected)).join("; ")}`, {
                names,
                public_addresses: expected,
              });
              return `${names.length === 1 ? names[0] : `${names.length} names`} must point to ${expected.join(", ")}`;
            },

            creating_postgres: async (step) => {
              const db = await ensurePostgres(docker, layout, step, {
                image: dbImage,
                extraLabels,
                readyTimeoutMs: timing.dbReadyTimeoutMs,
                clock: deps.clock,
              });
              s.databaseIsNew = db.volumeCreated;
              s.dbContainerId = db.containerId;
              return `PostgreSQL ${layout.dbContainer} accepts connections`;
            },

            cloning_platform_repos: async (step) => {
              s.staging = await stageAddonRepositories(addonReposDir(layout.dir), knownHostsDir(layout.dir));
              return cloneAddonLevel(s.staging, params, "platform", step, timing.gitTimeoutMs);
            },

            cloning_org_repos: async (step) => cloneAddonLevel(need(s.staging), params, "organization", step, timing.gitTimeoutMs),

            cloning_repo: async (step) => {
              if (params.git === null) {
                await emptyCheckout(layout.addonsDir, (dir) => mkdir(dir, { mode: 0o755 }).then(() => undefined));
                step.log("info", "No repository configured: the image runs as is (skipped)");
                const extra = await finishAddonCheckout(s, layout, params, step, timing.gitTimeoutMs);
                return `Skipped: no repository${extra}`;
              }
              const url = redactUrl(params.git.url);
              step.log("info", `Cloning ${url} (branch ${params.git.branch}${params.git.commit ? `, commit ${params.git.commit}` : ""})`);
              const checkout = await checkoutRepository(params.git, layout.addonsDir, {
                signal: step.signal,
                timeoutMs: timing.gitTimeoutMs,
              });
              s.commit = checkout.commit;
              s.hasRequirements = checkout.hasRequirements;
              step.log("info", `Checked out commit ${checkout.commit}`, { commit: checkout.commit, branch: params.git.branch });
              const extra = await finishAddonCheckout(s, layout, params, step, timing.gitTimeoutMs);
              return `Commit ${checkout.commit}${extra}`;
            },

            pulling_image: async (step) => {
              const source = await ensureImage(docker, params.image, step);
              // The image's own user (16.0/17.0: 101, 18.0/19.0: 100), never assumed: its files must be readable by it.
              const user = await erpUserOf(docker, params.image);
              s.erpUser = user;
              step.log("info", `The image runs as uid ${user.uid}, gid ${user.gid}`, { uid: user.uid, gid: user.gid });
              await prepareDataDir(layout.dataDir, user, step);
              await preparePythonLayer(layout.dir, user, (message) => step.log("info", message));
              // Before any ERP process of this deploy runs: a module install may import them.
              const files = s.requirementFiles ?? [];
              if (files.length > 0) {
                s.pythonLayer = await installIntoLayer(
                  docker,
                  {
                    name: `${layout.erpContainer}-pip-${randomBytes(4).toString("hex")}`,
                    image: params.image,
                    user,
                    labels: environmentLabels(layout.environmentId, "erp-run", { ...extraLabels, "berth.deployment_id": params.deployment_id }),
                    network: layout.network,
                    environmentDir: layout.dir,
                    // The code only: odoo.conf is written later (generating_config).
                    binds: [`${layout.addonsDir}:/mnt/extra-addons:ro`, `${addonReposDir(layout.dir)}:${ADDON_REPOS_MOUNT}:ro`],
                    files,
                  },
                  { deadlineMs: timing.dataTransferMs, signal: step.signal, log: (level, message) => step.log(level, message) },
                );
              }
              return source === "local" ? `Using local image ${params.image}` : `Pulled ${params.image}`;
            },

            generating_config: async (step) => {
              const sizing = need(s.sizing);
              s.dbPassword = await readPassword(layout);
              s.previousConf = await readFile(layout.configFile, "utf8").catch(() => null);
              const adminPasswd = params.admin_passwd ?? (await adminPassword(layout));
              const conf = renderOdooConf({
                series: seriesOf(params.erp_version),
                adminPasswd,
                withoutDemo: withoutDemo(params),
                dbHost: layout.dbContainer,
                dbPort: ERP_DB_PORT,
                dbUser: ERP_DB_USER,
                dbPassword: s.dbPassword,
                dbName: ERP_DB_NAME,
                sizing,
                proxyMode: params.domain !== null,
                ...(s.addonsFolders ? { addonsPath: s.addonsFolders.map((f) => f.container) } : {}),
              });
              writeFileAtomic(layout.configFile, conf, SECRET_FILE_MODE);
              await readableByErp(layout.configFile, need(s.erpUser), step);
              step.log("info", `Wrote ${layout.configFile}`, {
                workers: sizing.workers,
                limit_memory_soft: sizing.limit_memory_soft,
                limit_memory_hard: sizing.limit_memory_hard,
                db_host: layout.dbContainer,
              });
              return `odoo.conf written (workers ${sizing.workers})`;
            },

            starting_container: async (step) => {
              const sizing = need(s.sizing);
              await prepareDatabase(step);
              if (params.admin_login !== undefined && migration !== null) {
                // A migrated database has its own users; the control plane sends none for it anyway.
                step.log("info", "The administrator's password was not set: the database was restored from a migration's backup and keeps its own users");
              } else if (params.admin_login !== undefined) {
                const login = await setAdministratorPassword(docker, need(s.dbContainerId), params.admin_login.password);
                if (login === null) step.log("warning", "The database has no administrator (user 2): the administrator's password was not set");
                else {
                  s.adminLogin = { login, version: params.admin_login.version };
                  step.log("info", `The administrator's password (login ${login}) was set in the database`);
                }
              }
              migration?.markRestarting(step);
              s.containerId = await replaceErpContainer(
                docker,
                layout,
                {
                  name: layout.erpContainer,
                  image: params.image,
                  labels: environmentLabels(layout.environmentId, "erp", {
                    ...extraLabels,
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
                { graceSeconds: timing.stopGraceSeconds, suffix: params.deployment_id.slice(0, 8), keepPrevious: s.snapshot != null || migration?.keepsPreviousErp === true },
              );
              s.hostPort = await hostPortOf(docker, s.containerId);
              await previous.switched(step.log);
              return `ERP container ${layout.erpContainer} started; port 8069 on 127.0.0.1:${s.hostPort ?? "?"}`;
            },

            installing_dependencies: async (step) => {
              // Installed by pulling_image into the Python layer, before the ERP of this deploy started.
              if (s.pythonLayer === undefined) {
                step.log("info", "No requirements.txt in the repository or its add-on repositories: nothing to install");
                return "Nothing to install";
              }
              step.log(s.pythonLayer.installed ? "info" : "warning", s.pythonLayer.summary);
              return s.pythonLayer.summary;
            },

            initializing_database: async (step) => {
              const done = (s.modules ?? []).map((m) => `${m.name} ${m.action}${m.to_version ? ` (${m.to_version})` : ""}`);
              if (migration?.restored === true) {
                step.log("info", `Database "${ERP_DB_NAME}" was restored from migration ${params.archive?.migration_id ?? ""}'s backup before the ERP started`);
              } else if (s.initialized === true) {
                step.log("info", `Database "${ERP_DB_NAME}" was initialised before the ERP started (base${withoutDemo(params) ? ", no demo data" : ", demo data"})`);
              } else step.log("info", "Existing database kept (volume reused)");
              if (s.snapshot) step.log("info", `Pre-deploy snapshot ${s.snapshot.backup_id}`, { backup_id: s.snapshot.backup_id });
              if (done.length > 0) step.log("info", `Modules: ${done.join(", ")}`, { modules: s.modules ?? [] });
              const head = migration?.restored === true ? "Database restored" : s.initialized === true ? "Database initialised" : "Existing database kept";
              return done.length > 0 ? `${head}; ${done.length} module(s) installed or upgraded` : head;
            },

            verifying_dns: async (step) => {
              if (names.length === 0) {
                step.log("info", "No domain: nothing to verify");
                return "No domain";
              }
              const checked = await checkNames(deps.proxy, names, (level, message, data) => step.log(level, message, data));
              s.dns = checked.dns;
              const elsewhere = checked.elsewhere;
              return elsewhere === 0 ? "DNS points here" : `${elsewhere} of ${names.length} name(s) do not point here (warning)`;
            },

            configuring_traefik: async (step) => {
              const log = (level: "info" | "warning", message: string) => step.log(level, message);
              if (names.length === 0) return (await unroute(deps.proxy, docker, layout.environmentId, log)) ? "Route removed" : "Skipped: no domain";
              const gevent = need(s.sizing).workers > 0;
              await deps.proxy.route(
                docker,
                { environmentId: layout.environmentId, names, upstream: layout.erpContainer, network: layout.network, gevent, dns: s.dns },
                params.proxy,
                log,
              );
              step.log(
                "info",
                `Routing ${names.map((n) => `https://${n}`).join(", ")} to ${layout.erpContainer}:8069${gevent ? " (/websocket and /longpolling to 8072)" : ""}`,
              );
              const valid = await awaitCertificates(deps.proxy, docker, names, s.dns, (level, message) => step.log(level, message), step.signal);
              return `Routing ${names[0]}; ${valid} of ${names.length} certificate(s) valid`;
            },

            health_check: async (step) => {
              s.healthy = await checkHealth(docker, need(s.containerId), s.hostPort ?? null, step, deps.clock, timing);
              // Replaced data is at stake, as after an upgrade: unhealthy fails, and the catch swaps back.
              if (migration?.replacesExisting === true && !s.healthy) {
                throw new CommandError("restore_unhealthy", "the ERP was not healthy on the restored database");
              }
              if (s.snapshot != null) {
                if (!s.healthy) {
                  const snapshot = s.snapshot;
                  step.log("error", "The ERP is not healthy after the module upgrade: rolling code, configuration, database and file store back");
                  await previous.rollback(step, need(s.containerId));
                  const again = await checkHealth(docker, need(s.containerId), s.hostPort ?? null, step, deps.clock, timing);
                  step.log(again ? "info" : "warning", again ? "The previous version is healthy again" : "The previous version is not healthy either");
                  throw new CommandError("health_check_failed", `the ERP was not healthy after the module upgrade: rolled back to ${snapshot.backup_id}`);
                }
                await removeParkedErps(step);
              }
              return s.healthy ? "ERP healthy" : "ERP not healthy (non-fatal)";
            },

            completed: async (step) => {
              await dropPreviousCheckout(layout.addonsDir);
              await dropPreviousCheckout(addonReposDir(layout.dir));
              // As read after the module run: starting the ERP installs and upgrades nothing.
              if (s.dbModulesAfter !== undefined) writeModuleState(layout, s.addons ?? [], s.dbModulesAfter);
              // The old ERP stays parked until the restore is committed: until then a failure swaps back to it.
              if (migration !== null && (await migration.commit(step.log))) await removeParkedErps(step);
              step.log("info", `${kind === "redeploy" ? "Redeployment" : "Deployment"} finished`);
              return "Done";
            },
          },
          timing.steps.deploy,
        );
      } catch (caught) {
        // Anything that fails after the modules ran (a cancel, a deadline, the switch, the
        // proxy) leaves the database upgraded: back to the snapshot, as for a failed upgrade.
        const log: StepScope["log"] = (level, message, data) => ctx.emit.log(level, message, { step: null, ...(data ? { data } : {}) });
        // A restore's copy is dropped, or swapped back, before the old ERP resumes on it.
        const error = migration === null ? caught : await migration.undo(caught, log);
        if (s.snapshot == null || s.modulesRan !== true || s.rolledBack === true) {
          if (s.rolledBack !== true) await previous.resume(log);
          throw error;
        }
        const snapshot = s.snapshot;
        log("error", `The deployment failed after its module upgrade: rolling back to ${snapshot.backup_id}`);
        const current = await findErpContainer(docker, layout);
        const isNew = current !== null && current.id !== s.oldErpId;
        await previous.rollback({ step: "completed", signal: new AbortController().signal, log }, isNew ? current.id : null);
        const reason = error instanceof Error ? error.message : String(error);
        const code = error instanceof CommandError ? error.code : "deploy_failed";
        throw new CommandError(code, `${reason}; rolled back to ${snapshot.backup_id}`);
      }

      return {
        container_id: need(s.containerId),
        container_name: layout.erpContainer,
        image: params.image,
        host_port: s.hostPort ?? null,
        commit: s.commit ?? null,
        /** The commit of each add-on repository, so retry and rollback check out the same. */
        addon_repositories: (s.addonCheckouts ?? []).map((c) => ({ id: c.id, level: c.level, name: c.name, branch: c.branch, commit: c.commit })),
        db_volume: layout.dbVolume,
        db_container: layout.dbContainer,
        healthy: s.healthy ?? false,
        urls: names.map((n) => `https://${n}`),
        database: { initialized: s.initialized ?? false, without_demo: withoutDemo(params), language: params.init?.language ?? null },
        modules: s.modules ?? [],
        snapshot_id: s.snapshot?.backup_id ?? null,
        admin_login: s.adminLogin ?? null,
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
        ...(migration === null ? {} : { migration_restore: migration.result() }),
      };
    });
}

/** cloning_platform_repos / cloning_org_repos: this level's repositories into the staging folder. */
async function cloneAddonLevel(staging: AddonStaging, params: DeployParams, level: "platform" | "organization", step: StepScope, timeoutMs: number): Promise<string> {
  const repos = (params.addon_repositories ?? []).filter((r) => r.level === level);
  const what = level === "platform" ? "platform" : "organisation";
  if (repos.length === 0) {
    step.log("info", `No ${what} repositories configured`);
    return "None configured";
  }
  const done = await staging.clone(repos, { signal: step.signal, timeoutMs, log: step.log });
  return `${done.length} ${what} repositor${done.length === 1 ? "y" : "ies"}: ${done.map((c) => `${c.name}@${c.commit.slice(0, 12)}`).join(", ")}`;
}

/**
 * End of cloning_repo: the environment's own add-on repositories, then the staged set
 * replaces the live one, and the addons_path and requirement files are worked out.
 */
async function finishAddonCheckout(
  s: Partial<DeployState> & Pick<DeployState, "layout">,
  layout: EnvironmentLayout,
  params: DeployParams,
  step: StepScope,
  timeoutMs: number,
): Promise<string> {
  const staging = need(s.staging);
  const own = (params.addon_repositories ?? []).filter((r) => r.level === "environment");
  try {
    if (own.length > 0) await staging.clone(own, { signal: step.signal, timeoutMs, log: step.log });
    await staging.swapIn();
  } catch (error) {
    await staging.discard();
    throw error;
  }
  s.addonCheckouts = staging.checkouts;
  const reposDir = addonReposDir(layout.dir);
  // The staged folders moved: the checkouts' folders are relative, so they still hold.
  s.addonsFolders = await buildAddonsPath(layout.addonsDir, reposDir, s.addonCheckouts);
  s.requirementFiles = await requirementFiles(layout.addonsDir, s.addonCheckouts);
  if (s.addonCheckouts.length > 0 || s.addonsFolders.length > 1) {
    step.log("info", `addons_path: ${s.addonsFolders.map((f) => f.container).join(",")}`, { addons_path: s.addonsFolders.map((f) => f.container) });
  }
  return own.length > 0 ? `; ${own.length} environment add-on repositor${own.length === 1 ? "y" : "ies"}` : "";
}

function withoutDemo(params: DeployParams): boolean {
  return params.init?.without_demo ?? true;
}

function need<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("a step ran before the step that prepares its input");
  return value;
}
