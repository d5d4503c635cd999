// Reading operations, whichever API asks: the public API's task, its log pages and an
// environment's deployment history (in the key's scope); the platform API's deployment
// list, log entries and step progress (by the person's role in the project).
import { HISTORY_KINDS } from "./deployment-state.ts";
import type { CursorCodec } from "../../../lib/cursor.ts";
import { DomainError, notFound } from "../../../lib/errors.ts";
import { listPage, type PageRequest } from "../../../db/keyset.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { Access } from "../../auth/access.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { EnvironmentsRepo } from "../../environments/environments.repo.ts";
import type { DeploymentsRepo } from "./operations.repo.ts";
import type { OperationAccess } from "./operation-access.ts";
import { taskView } from "./task-view.ts";
import { logEntry } from "./deployment-record.ts";

/** The newest lines per step that a progress view shows. */
const PROGRESS_LINES_PER_STEP = 50;

export interface OperationReadsDeps {
  deployments: Pick<DeploymentsRepo, "get" | "getTask" | "logsAfter" | "listForEnvironment" | "list" | "logPage" | "latestLinesPerStep">;
  environments: Pick<EnvironmentsRepo, "get">;
  cursors: CursorCodec;
  access: Pick<Access, "requireProject">;
}

export function createOperationReads(deps: OperationReadsDeps & { ops: Pick<OperationAccess, "load"> }) {
  const { deployments: repo, ops } = deps;
  return {
    async getTask(scope: Scope, id: string) {
      const row = await repo.getTask(scope, id);
      if (!row) throw notFound("Task");
      return taskView(row);
    },

    /** A page of the task's log lines, oldest first; the cursor is the last line's id (opaque to clients). */
    async logs(scope: Scope, id: string, page: PageRequest) {
      const row = await repo.get(scope, id);
      if (!row) throw notFound("Task");
      if (page.cursor !== undefined && !/^\d{1,18}$/.test(page.cursor)) {
        throw new DomainError("invalid_cursor", "The cursor is not valid for this list; use pagination.next_cursor from a previous page");
      }
      const { rows, total } = await repo.logsAfter(row.id, page.cursor ?? null, page.limit);
      const hasMore = rows.length > page.limit;
      const items = hasMore ? rows.slice(0, page.limit) : rows;
      return { data: items.map(logEntry), pagination: { has_more: hasMore, next_cursor: hasMore ? String(items[items.length - 1]!.id) : null, total } };
    },

    async history(scope: Scope, environmentId: string, page: PageRequest) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      return listPage(deps.cursors, `deployments:${environmentId}`, page, (limit, after) => repo.listForEnvironment(env.id, [...HISTORY_KINDS], limit, after), taskView);
    },

    /** The platform API's deployment, with the caller's access to it. */
    load: ops.load,

    async listDeployments(person: SessionPrincipal, q: { project_id?: string | undefined; status?: string | undefined; skip: number; limit: number }) {
      if (q.project_id) await deps.access.requireProject(person, q.project_id, "project.deployments.list");
      return repo.list({ visibleTo: person.isPortalAdmin ? null : person.userId, projectId: q.project_id, status: q.status, skip: q.skip, limit: q.limit });
    },

    async deploymentLogs(person: SessionPrincipal, id: string, q: { level?: string | undefined; skip: number; limit: number }) {
      const d = await ops.load(person, id, "project.deployments.view");
      return { deployment: d, rows: await repo.logPage(d.id, q) };
    },

    async progress(person: SessionPrincipal, id: string) {
      const d = await ops.load(person, id, "project.deployments.view");
      const byStep = new Map<string, { message: string; timestamp: string }[]>();
      for (const r of await repo.latestLinesPerStep(d.id, PROGRESS_LINES_PER_STEP)) {
        const list = byStep.get(r.step) ?? [];
        list.push({ message: r.message, timestamp: new Date(r.ts).toISOString() });
        byStep.set(r.step, list);
      }
      return { deployment: d, byStep };
    },
  };
}
