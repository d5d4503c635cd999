// Folds agent events into operation rows and environments, inside the ingest transaction,
// so progress, status and the stored events can never disagree. Only fresh events arrive
// here (the ingest watermark drops resends), so counting finished steps is safe. What each
// event does to a status is the state machine's (deployment-state.ts); the writes are in
// deployment-events.repo.ts.
import type pg from "pg";
import type { CommandResultEvent, Event } from "@berth/protocol";
import type { EventApplier } from "../agents/event-ingest.ts";
import { ENVIRONMENT_STATUS_AFTER_SUCCESS, isDeployKind, resultStatus, type OperationKind } from "./deployment-state.ts";
import * as writes from "./deployment-events.repo.ts";

/**
 * Applies a server's fresh events; resolves with how many it refused because they name an
 * operation that is not the sender's (another server's, perhaps another organisation's):
 * those change nothing. A command.result of another server's command is refused by
 * ingestion (it ends no command there) and finds no operation here.
 */
export const applyDeploymentEvents: EventApplier = async (client, serverId, fresh) => {
  let refused = 0;
  for (const e of fresh) {
    switch (e.kind) {
      case "step.started":
        if (e.deployment_id) {
          const { own, moved } = await writes.stepStarted(client, serverId, e.deployment_id, e.step, e.ts);
          if (!own) refused++;
          if (moved && isDeployKind(moved.kind)) await writes.setEnvironmentDeploying(client, moved.environment_id);
        }
        break;
      case "step.finished":
        if (e.deployment_id && !(await writes.stepFinished(client, serverId, e.deployment_id))) refused++;
        break;
      case "step.failed":
        if (e.deployment_id && !(await writes.stepFailed(client, serverId, e.deployment_id, e.error.message))) refused++;
        break;
      case "command.result":
        await commandResult(client, serverId, e);
        break;
      default:
        break;
    }
  }
  return refused;
};

async function commandResult(client: pg.PoolClient, serverId: string, r: CommandResultEvent) {
  const op = await writes.lockActiveOperationOf(client, serverId, r.command_id);
  if (!op) return;
  const status = resultStatus(op.kind, { ok: r.ok, errorCode: r.error?.code });
  const result = (r.result ?? {}) as { container_id?: string; container_name?: string; image?: string; commit?: string };
  await writes.finishOperation(client, op.id, {
    status,
    ts: r.ts,
    errorMessage: r.ok ? null : (r.error?.message ?? "failed"),
    containerId: result.container_id ?? null,
    image: result.image ?? null,
    commit: result.commit ?? null,
  });
  if (op.kind === "backup") {
    const files = ((r.result ?? {}) as { files?: { size?: number }[] }).files ?? [];
    await writes.finishBackup(client, op.id, {
      ok: r.ok,
      files: r.ok ? files : null,
      sizeBytes: r.ok ? files.reduce((n, f) => n + (f.size ?? 0), 0) : null,
      errorMessage: r.ok ? null : (r.error?.message ?? "failed"),
      ts: r.ts,
    });
  }
  if (r.ok && op.kind === "rollback") await writes.markRolledBack(client, op.id);
  const after = ENVIRONMENT_STATUS_AFTER_SUCCESS[op.kind as OperationKind];
  if (r.ok && op.kind === "destroy") {
    await writes.setEnvironmentDestroyed(client, op.environment_id);
  } else if (r.ok && after) {
    await writes.setEnvironmentAfterSuccess(client, op.environment_id, {
      status: after,
      containerId: result.container_id ?? null,
      containerName: result.container_name ?? null,
      reactivate: isDeployKind(op.kind),
    });
  } else if (status === "failed" && op.kind !== "backup") {
    await writes.setEnvironmentError(client, op.environment_id);
  }
}

export type { Event };
