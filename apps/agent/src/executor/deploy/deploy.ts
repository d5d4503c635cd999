// deploy and redeploy: the 17 steps of platform spec 2.2 with real Docker objects, each
// step a phase (phases/*.ts) that takes what earlier ones made and returns what it made.
// The database volume and the data dir are created once and kept by every later deploy; the
// ERP container is replaced.
//
// The database work happens before the switch: the step ids and their order are fixed by
// the spec, and initializing_database comes after starting_container, so starting_container
// first prepares the database (phases/database.ts: a migration's backup restored, a new one
// initialised with -i base, the modules run after a pre-deploy snapshot), each in a one-off
// container of the new image with --stop-after-init, and only then replaces the container.
// initializing_database reports what was done. What a failure undoes is rollback-policy.ts's.
import { environmentLayout } from "../environment/environment-layout.ts";
import { routedNames } from "../environment/routing.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import type { CommandHandler } from "../runner/handler-types.ts";
import type { DeployContext } from "./deploy-context.ts";
import { failDeploy, noProgress } from "./rollback-policy.ts";
import { runStepFlow } from "./step-flow.ts";
import { clonePlatformRepos, cloneOrgRepos, cloneRepo } from "./phases/code.ts";
import { generateConfig } from "./phases/config.ts";
import { prepareDatabase, reportDatabase } from "./phases/database.ts";
import { complete, deployResult } from "./phases/finish.ts";
import { pullImage, reportDependencies } from "./phases/image.ts";
import { connect, createNetwork, createPostgres, initialize } from "./phases/prepare.ts";
import { configureDns, configureRouting, verifyDns } from "./phases/route.ts";
import { startErp } from "./phases/start.ts";
import { checkErpHealth } from "./phases/verify.ts";

export function createDeployHandler(deps: ExecutorDeps, kind: "deploy" | "redeploy"): CommandHandler<"deploy" | "redeploy"> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, kind, async () => {
      const c: DeployContext = {
        kind,
        params,
        deps,
        docker: ctx.docker,
        layout: environmentLayout(deps.stateDir, params.environment_id),
        timing,
        extraLabels: deps.extraLabels ?? {},
        names: routedNames(params.domain, params.aliases),
      };
      // What the database phase did, for a failure to undo.
      const progress = noProgress();
      const done = await runStepFlow(kind, ctx, timing.steps.deploy, async (step) => {
        const { sizing } = await step("initializing", (s) => initialize(c, s));
        await step("connecting", () => connect(c));
        await step("creating_network", (s) => createNetwork(c, s));
        await step("configuring_dns", (s) => configureDns(c, s));
        const { dbContainerId } = await step("creating_postgres", (s) => createPostgres(c, s));
        const { staging } = await step("cloning_platform_repos", (s) => clonePlatformRepos(c, s));
        await step("cloning_org_repos", (s) => cloneOrgRepos(c, staging, s));
        const code = await step("cloning_repo", (s) => cloneRepo(c, staging, s));
        const image = await step("pulling_image", (s) => pullImage(c, code.requirementFiles, s));
        const { erpUser } = image;
        const { previousConf } = await step("generating_config", (s) => generateConfig(c, { sizing, addonsFolders: code.addonsFolders, erpUser }, s));
        const { db, erp } = await step("starting_container", async (s) => {
          const db = await prepareDatabase(c, { sizing, dbContainerId, addonsFolders: code.addonsFolders, erpUser, previousConf }, progress, s);
          const erp = await startErp(c, { sizing, dbContainerId, db }, s);
          return { summary: erp.summary, db, erp };
        });
        await step("installing_dependencies", (s) => reportDependencies(image.pythonLayer, s));
        await step("initializing_database", (s) => reportDatabase(c, db, s));
        const { dns } = await step("verifying_dns", (s) => verifyDns(c, s));
        await step("configuring_traefik", (s) => configureRouting(c, { gevent: sizing.workers > 0, dns }, s));
        const { healthy } = await step("health_check", (s) => checkErpHealth(c, { erp, db }, s));
        await step("completed", (s) => complete(c, { db, containerId: erp.containerId }, s));
        return { code, db, erp, healthy };
      }).catch(async (caught: unknown) => {
        throw await failDeploy(c, progress, caught, ctx.emit);
      });
      return deployResult(c, done);
    });
}
