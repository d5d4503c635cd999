// Operations that wait on another one. An environment runs one operation at a time, so what
// comes second is started only when the first has finished:
//   a copy across servers (copy-from "fresh")  names the backup of its source taken for it;
//        it has no command until that backup is in the store (dispatch/data-params.ts), is
//        dispatched when it is, and fails saying why when the backup failed.
//   a staging refresh on push (git-hooks)  is a copy whose extra_data.then_deploy names the
//        pushed commit: when the copy succeeded, that deploy starts (once: its idempotency
//        key is the copy's id). When the copy failed, nothing more runs: the environment is
//        as it was and the push's next delivery tries again.
// Woken on every replica by the ingest's NOTIFY when a backup or copy finishes
// (OPERATION_FINISHED_CHANNEL), and by the minute's maintenance for a wake-up lost with a
// replica or its connection.
import type pg from "pg";
import { listen, type PgListener } from "../../../db/pg-listener.ts";
import type { Clock } from "../../../lib/clock.ts";
import { DomainError } from "../../../lib/errors.ts";
import { IDEMPOTENCY_TTL_MS } from "../../idempotency/idempotency.ts";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import { storedOptions } from "../dispatch/stored-options.ts";
import { OPERATION_FINISHED_CHANNEL } from "./deployment-events.repo.ts";
import type { OperationStart } from "./operation-start.ts";
import { THEN_DEPLOY_SCOPE, type OperationChainsRepo } from "./operation-chains.repo.ts";

/** The deploy a staging refresh runs after its copy: the pushed commit. */
export interface ThenDeploy {
  branch: string | null;
  commit: string | null;
  message: string | null;
}

export function createOperationChains(deps: {
  repo: OperationChainsRepo;
  dispatcher: Pick<Dispatcher, "dispatchPending">;
  start: Pick<OperationStart, "requestOperation">;
  clock: Clock;
}) {
  /** Starts the deploy of each copy that succeeded and has none; one still busy is tried at the next wake-up. */
  async function startDeploysAfterCopies(): Promise<number> {
    const now = deps.clock.now();
    const copies = await deps.repo.copiesAwaitingDeploy(new Date(now.getTime() - IDEMPOTENCY_TTL_MS), 100);
    let started = 0;
    for (const copy of copies) {
      const { extra } = storedOptions(copy.extraData);
      const then = extra.then_deploy as ThenDeploy;
      const gitPush = extra.git_push as Record<string, unknown> | undefined;
      try {
        await deps.start.requestOperation(
          { organizationId: copy.organizationId, projectId: copy.projectId },
          copy.environmentId,
          "deploy",
          { userId: copy.triggeredBy, apiKeyId: copy.apiKeyId, idempotency: { scope: THEN_DEPLOY_SCOPE, key: copy.id, claimedAt: now } },
          { trigger: copy.trigger, git: then, extraData: { after_copy_id: copy.id, ...(gitPush ? { git_push: gitPush } : {}) } },
        );
        started++;
      } catch (err) {
        if (!(err instanceof DomainError && (err.code === "task_in_progress" || err.code === "not_found"))) throw err;
      }
    }
    return started;
  }

  /** Everything waiting on a finished operation, now. */
  async function run(): Promise<void> {
    await deps.dispatcher.dispatchPending();
    await startDeploysAfterCopies();
  }

  return {
    run,
    startDeploysAfterCopies,
    /** Wakes run() on every NOTIFY; runs never overlap, and a wake-up during one makes one more. */
    async listen(pool: pg.Pool, onError: (err: unknown) => void): Promise<PgListener> {
      let running: Promise<void> | null = null;
      let again = false;
      const wake = () => {
        if (running) {
          again = true;
          return;
        }
        running = (async () => {
          do {
            again = false;
            await run().catch(onError);
          } while (again);
        })().finally(() => {
          running = null;
        });
      };
      return listen(pool, [OPERATION_FINISHED_CHANNEL], wake, (msg, err) => onError(err ?? new Error(msg)));
    },
  };
}
export type OperationChains = ReturnType<typeof createOperationChains>;
