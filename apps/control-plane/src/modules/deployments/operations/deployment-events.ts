// Folds agent events into operation rows and environments, inside the ingest transaction,
// so progress, status and the stored events can never disagree. Only fresh events arrive
// here (the ingest watermark drops resends), so counting finished steps is safe. What each
// event does to a status is the state machine's (deployment-state.ts); the writes are in
// deployment-events.repo.ts.
import type pg from "pg";
import type { CommandResultEvent, Event } from "@berth/protocol";
import type { EventApplier } from "../../agents/event-ingest.ts";
import { ENVIRONMENT_STATUS_AFTER_SUCCESS, isDeployKind, resultStatus, type OperationKind } from "./deployment-state.ts";
import * as writes from "./deployment-events.repo.ts";
import { reportedTests } from "./tests-result.ts";
import { recordAddonCommits } from "../../addon-repositories/addon-repositories.repo.ts";
import { addonCommitsOf } from "../../addon-repositories/addon-snapshots.ts";

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
  // A backup whose files were to go to the backup store succeeds only if all of them arrived intact.
  const verdict = op.kind === "backup" ? backupVerdict(r, await writes.lockBackupStorage(client, op.id)) : { ok: r.ok, code: r.error?.code, message: r.error?.message };
  const status = resultStatus(op.kind, { ok: verdict.ok, errorCode: verdict.code });
  const result = (r.result ?? {}) as { container_id?: string; container_name?: string; image?: string; commit?: string };
  await writes.finishOperation(client, op.id, {
    status,
    ts: r.ts,
    errorMessage: verdict.ok ? null : (verdict.message ?? "failed"),
    containerId: result.container_id ?? null,
    image: result.image ?? null,
    commit: result.commit ?? null,
  });
  if (op.kind === "backup") {
    const files = ((r.result ?? {}) as { files?: { size?: number }[] }).files ?? [];
    await writes.finishBackup(client, op.id, {
      ok: verdict.ok,
      files: verdict.ok ? files : null,
      sizeBytes: verdict.ok ? files.reduce((n, f) => n + (f.size ?? 0), 0) : null,
      errorMessage: verdict.ok ? null : (verdict.message ?? "failed"),
      ts: r.ts,
    });
  }
  // A copy across servers waits for its source's backup, a staging refresh's deploy for its copy.
  if (op.kind === "backup" || op.kind === "copy") await writes.announceFinished(client, op.id);
  if (isDeployKind(op.kind)) await applyErpResult(client, op, r);
  // The commit each add-on repository got, for retries and rollbacks of this deployment.
  if (r.ok && isDeployKind(op.kind)) await recordAddonCommits(client, op.id, addonCommitsOf((r.result ?? {}).addon_repositories));
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
  } else if (status === "failed" && op.kind !== "backup" && op.kind !== "copy") {
    // A failed backup changed nothing, and a failed copy was undone by its agent (the target as it was).
    await writes.setEnvironmentError(client, op.environment_id);
  }
}

export type { Event };

interface FileSum {
  name: string;
  size: number;
  sha256: string;
}

/**
 * Whether a backup succeeded: as its agent says, and, when its files were to go to the
 * backup store, only if every file the agent reports (`files`, and `stored`: each file it
 * uploaded, the manifest included) is recorded there with the same size and SHA-256.
 */
export function backupVerdict(
  r: Pick<CommandResultEvent, "ok" | "error" | "result">,
  storage: { storage: string | null; stored_files: unknown } | undefined,
): { ok: boolean; code?: string | undefined; message?: string | undefined } {
  if (!r.ok) return { ok: false, code: r.error?.code, message: r.error?.message };
  if (!storage || storage.storage === null) return { ok: true };
  const result = (r.result ?? {}) as { files?: unknown; stored?: unknown };
  const list = (v: unknown): FileSum[] =>
    (Array.isArray(v) ? v : []).filter((f): f is FileSum => typeof f?.name === "string" && typeof f?.size === "number" && typeof f?.sha256 === "string");
  const arrived = new Map(list(storage.stored_files).map((f) => [f.name, f]));
  const expected = new Map([...list(result.files), ...list(result.stored)].map((f) => [f.name, f]));
  const problems: string[] = [];
  if (expected.size === 0) problems.push("the agent reported no file");
  for (const f of expected.values()) {
    const got = arrived.get(f.name);
    if (!got) problems.push(`${f.name} never arrived`);
    else if (got.size !== f.size || got.sha256 !== f.sha256) problems.push(`${f.name} arrived as ${got.size} bytes (sha256 ${got.sha256.slice(0, 12)}…), not ${f.size} bytes (sha256 ${f.sha256.slice(0, 12)}…)`);
  }
  if (problems.length === 0) return { ok: true };
  return { ok: false, code: "backup_upload_incomplete", message: `The backup store did not receive every file of this backup intact: ${problems.join("; ")}` };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MODULE_ACTIONS = new Set(["installed", "upgraded", "failed"]);
/** More than this many module lines in one result are not kept (Odoo installs have a few hundred). */
const MAX_MODULES = 2000;
const text = (v: unknown, max: number): string | null => (typeof v === "string" ? v.slice(0, max) : null);

/** The agent's module lines, kept only in the documented shape. */
export function moduleOutcomes(value: unknown): { name: string; action: string; from_version: string | null; to_version: string | null }[] | null {
  if (!Array.isArray(value)) return null;
  return value.slice(0, MAX_MODULES).flatMap((m: unknown) => {
    const o = (m ?? {}) as Record<string, unknown>;
    if (typeof o.name !== "string" || typeof o.action !== "string" || !MODULE_ACTIONS.has(o.action)) return [];
    return [{ name: o.name.slice(0, 128), action: o.action, from_version: text(o.from_version, 64), to_version: text(o.to_version, 64) }];
  });
}

/** The agent's list of pre-deploy snapshots, kept only in the documented shape. */
export function preDeployBackups(value: unknown): writes.PreDeployBackup[] | null {
  if (!Array.isArray(value)) return null;
  return value.slice(0, 100).flatMap((b: unknown) => {
    const o = (b ?? {}) as Record<string, unknown>;
    if (o.kind !== "pre_deploy" || typeof o.backup_id !== "string" || !UUID.test(o.backup_id)) return [];
    if (typeof o.deployment_id !== "string" || !UUID.test(o.deployment_id)) return [];
    if (typeof o.created_at !== "string" || Number.isNaN(Date.parse(o.created_at))) return [];
    const size = typeof o.size_bytes === "number" && Number.isSafeInteger(o.size_bytes) && o.size_bytes >= 0 ? o.size_bytes : null;
    return [{ backupId: o.backup_id.toLowerCase(), createdAt: new Date(o.created_at).toISOString(), deploymentId: o.deployment_id.toLowerCase(), sizeBytes: size }];
  });
}

/** The snapshot a failed deploy says it rolled back to ("… rolled back to <id> …"). */
export function rolledBackTo(message: string | undefined): string | null {
  const m = /rolled back to ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/i.exec(message ?? "");
  return m ? m[1]!.toLowerCase() : null;
}

/**
 * A deploy's ERP results: its module lines on the deployment, the environment's pre-deploy
 * snapshots replaced by the list the agent keeps, and a snapshot a failed deploy rolled back
 * to removed (it is the live database now).
 */
async function applyErpResult(client: pg.PoolClient, op: { id: string; environment_id: string; organization_id: string }, r: CommandResultEvent) {
  const result = (r.result ?? {}) as { modules?: unknown; tests?: unknown; backups?: unknown; admin_login?: unknown; migration_restore?: unknown };
  if (r.ok && result.migration_restore) await writes.migrationRestored(client, op.environment_id, r.ts);
  // The administrator's login password the database now has (the version the deploy sent).
  const login = (result.admin_login ?? null) as { version?: unknown } | null;
  if (r.ok && login && typeof login.version === "string" && !Number.isNaN(Date.parse(login.version))) {
    await writes.adminLoginApplied(client, op.environment_id, login.version);
  }
  const modules = moduleOutcomes(result.modules);
  if (modules) await writes.setModulesResult(client, op.id, modules);
  // Also on a failed deploy: a staging deploy refused for its tests reports them beside its error.
  const tests = reportedTests(result.tests);
  if (tests) await writes.setTestsResult(client, op.id, tests);
  const backups = preDeployBackups(result.backups);
  if (backups) await writes.replacePreDeployBackups(client, op.organization_id, op.environment_id, backups);
  const consumed = r.ok ? null : rolledBackTo(r.error?.message);
  if (consumed) await writes.removePreDeployBackup(client, op.environment_id, consumed);
}
