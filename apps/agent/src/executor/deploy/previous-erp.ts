// The ERP that served before a deploy, while the deploy may still go back to it.
//
// Writes during an upgrade: none. The old ERP stops for the pre-deploy snapshot and stays
// stopped, behind the proxy's maintenance page, until the upgrade's outcome: a write it
// accepted after the snapshot would be lost by a rollback to it. A deploy that fails before
// its upgrade ran starts it again (with the code and configuration it ran with); one that
// fails after brings code, configuration, database and file store back to the snapshot.
// Likewise a deploy that restores a migration's backup over a serving environment stops it
// only for the swap, and starts it again if the swap is undone (migration-restore.ts).
import { rename } from "node:fs/promises";
import type { DockerClient } from "../../docker/docker-client.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import type { EnvironmentLayout } from "../environment/environment-layout.ts";
import { findErpContainer, hostPortOf, putBackPrevious } from "../environment/erp-container.ts";
import { rollbackToSnapshot, type PreDeploySnapshot } from "../environment/pre-deploy-snapshot.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { addonReposDir } from "./addon-repositories.ts";
import { exists, readableByErp } from "./erp-files.ts";
import { giveTree, type ErpUser } from "../environment/erp-image-user.ts";
import { previousCheckout, restorePreviousCheckout } from "./git-checkout.ts";

/** What the deploy knows of the previous ERP once its database phase begins. */
export interface PreviousErpFacts {
  /** odoo.conf as it was before this deploy wrote it (null: there was none). */
  previousConf: string | null;
  dbContainerId: string;
  /** The user this deploy's image runs as. */
  erpUser: ErpUser;
  /** The user the previous ERP's image runs as (null: there was no previous ERP). */
  previousErpUser: ErpUser | null;
}

export function createPreviousErp(
  deps: Pick<ExecutorDeps, "proxy" | "clock"> & { docker: DockerClient; layout: EnvironmentLayout; stopGraceSeconds: number; dataTransferMs: number },
  facts: PreviousErpFacts,
) {
  const { docker, layout } = deps;
  /** The old ERP, stopped for the snapshot and kept stopped until the upgrade's outcome. */
  let stoppedOldErp: string | null = null;
  let rolledBack = false;

  /** Whom the previous ERP's files must belong to: its image's user (it may differ from this deploy's). */
  const previousUser = (): ErpUser => facts.previousErpUser ?? facts.erpUser;
  /** The data dir back to the previous ERP's user, before it starts on it again. */
  const dataDirToPrevious = async (log: StepScope["log"]) => {
    await giveTree(layout.dataDir, previousUser(), (message) => log("info", message));
  };

  /** The proxy's page for the environment; a proxy that fails is a warning (the deploy goes on). */
  const proxyMode = async (mode: "serving" | "maintenance", log: StepScope["log"]) => {
    try {
      const changed = await deps.proxy.setMode(docker, layout.environmentId, mode, (level, message) => log(level, message));
      if (changed) log("info", mode === "maintenance" ? "The proxy shows a maintenance page until the new version serves" : "The proxy routes the environment's address to the ERP again");
    } catch (error) {
      log("warning", `The proxy was not updated: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  /**
   * The old ERP started again must mount the code and configuration it ran with, not this
   * deploy's: Docker resolves bind mounts at start, so the project's checkout, the add-on
   * repositories (each when it has a previous one) and odoo.conf are put back at their paths
   * for the start, then this deploy's again. The running container keeps what it started with.
   */
  const withPreviousMounts = async (start: () => Promise<void>) => {
    const swaps: { live: string; previous: string; next: string }[] = [];
    for (const live of [layout.addonsDir, addonReposDir(layout.dir)]) {
      const previous = previousCheckout(live);
      if (await exists(previous)) swaps.push({ live, previous, next: `${live}.next` });
    }
    const nextConf = `${layout.configFile}.next`;
    const previousConf = facts.previousConf;
    for (const { live, previous, next } of swaps) {
      await rename(live, next);
      await rename(previous, live);
    }
    if (previousConf !== null) {
      await rename(layout.configFile, nextConf);
      writeFileAtomic(layout.configFile, previousConf, SECRET_FILE_MODE);
      await readableByErp(layout.configFile, previousUser(), { log: () => undefined });
    }
    try {
      await start();
    } finally {
      for (const { live, previous, next } of swaps) {
        await rename(live, previous);
        await rename(next, live);
      }
      if (previousConf !== null) await rename(nextConf, layout.configFile);
    }
  };

  /** The old ERP serves again (a deploy that fails before its upgrade ran, after it stopped it). */
  const resume = async (log: StepScope["log"]) => {
    const id = stoppedOldErp;
    if (id === null) return;
    stoppedOldErp = null;
    await dataDirToPrevious(log);
    await withPreviousMounts(() => docker.startContainer(id));
    log("warning", "The previous ERP container serves again");
    await proxyMode("serving", log);
  };

  /**
   * Code and configuration as the previous ERP ran with them are live again (a rollback): the
   * previous checkouts and odoo.conf, so that a later deploy's "previous" is still theirs.
   */
  const putBackCode = async (log: StepScope["log"]) => {
    if (await restorePreviousCheckout(layout.addonsDir)) log("warning", "Code: the previous add-ons checkout is back");
    if (await restorePreviousCheckout(addonReposDir(layout.dir))) log("warning", "Code: the previous add-on repositories are back");
    if (facts.previousConf !== null) {
      writeFileAtomic(layout.configFile, facts.previousConf, SECRET_FILE_MODE);
      await readableByErp(layout.configFile, previousUser(), { log });
      log("warning", "Configuration: the previous odoo.conf is back");
    }
  };

  /** Stops the old ERP, if it runs, behind the maintenance page until this deploy's outcome; returns its id. */
  const stop = async (log: StepScope["log"], why: string): Promise<string | null> => {
    const erp = await findErpContainer(docker, layout);
    if (erp === null || erp.state !== "running") return null;
    await proxyMode("maintenance", log);
    await docker.stopContainer(erp.id, deps.stopGraceSeconds);
    log("info", why);
    stoppedOldErp = erp.id;
    return erp.id;
  };

  return {
    resume,

    /** The snapshot's hook: stops the old ERP behind the maintenance page; a failed copy starts it again. */
    stopForSnapshot: (log: StepScope["log"]) => async () => {
      const stopped = await stop(log, "The ERP is stopped until the upgrade's outcome: no write can be made after the snapshot");
      if (stopped === null) return async () => undefined;
      return async (copied: boolean) => {
        if (!copied) await resume(log);
      };
    },

    /**
     * A restored database is about to replace the live one (migration-restore.ts): the old
     * ERP stops behind the maintenance page; returns its id, or null when it was not running.
     */
    stopForSwap: (log: StepScope["log"]) => stop(log, "The ERP is stopped for the swap to the restored database"),

    putBackCode,

    /** The old ERP, put back after this deploy's swap was undone, serves again, though the new ERP had taken over. */
    async resumeAfterSwapBack(id: string, log: StepScope["log"]) {
      stoppedOldErp = id;
      await resume(log);
    },

    /** The new ERP took over: the environment's address routes to it again. */
    async switched(log: StepScope["log"]) {
      if (stoppedOldErp === null) return;
      stoppedOldErp = null;
      await proxyMode("serving", log);
    },

    /** A rollback ran (once: a second is a no-op). */
    get rolledBack(): boolean {
      return rolledBack;
    },

    /**
     * Code, configuration, database and file store back to the snapshot; the previous ERP runs
     * again. Returns the ERP container serving now and its host port (null: no previous one).
     */
    async rollback(step: StepScope, snapshot: PreDeploySnapshot, newContainerId: string | null): Promise<{ containerId: string; hostPort: number | null } | null> {
      if (rolledBack) return null;
      rolledBack = true;
      let previousId: string | null;
      if (newContainerId !== null) previousId = await putBackPrevious(docker, layout, newContainerId, step, deps.stopGraceSeconds);
      else {
        const erp = await findErpContainer(docker, layout);
        previousId = erp?.id ?? null;
        if (erp !== null && erp.state === "running") await docker.stopContainer(erp.id, deps.stopGraceSeconds);
      }
      await putBackCode(step.log);
      const finish = await rollbackToSnapshot(docker, facts.dbContainerId, layout, snapshot, {
        now: deps.clock.now(),
        deadlineMs: deps.dataTransferMs,
        log: step.log,
      });
      let serving: { containerId: string; hostPort: number | null } | null = null;
      if (previousId !== null) {
        await dataDirToPrevious(step.log);
        await docker.startContainer(previousId);
        serving = { containerId: previousId, hostPort: await hostPortOf(docker, previousId) };
        step.log("warning", "The previous ERP container serves again");
      }
      if (stoppedOldErp !== null) {
        stoppedOldErp = null;
        await proxyMode("serving", step.log);
      }
      // The failed database and data dir, once the previous version serves.
      await finish();
      return serving;
    },
  };
}
export type PreviousErp = ReturnType<typeof createPreviousErp>;
