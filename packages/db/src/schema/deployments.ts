// Operations on environments and their log lines (modules/deployments).
import { sql } from "drizzle-orm";
import { bigserial, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { id, ts, txId } from "./columns.ts";
import { environments } from "./environments.ts";
import { organizations } from "./organizations.ts";
import { projects } from "./projects.ts";
import { servers } from "./servers.ts";
import { users } from "./users.ts";

/** One row per operation (deploy, redeploy, restart, start, stop, rollback, destroy, backup, restore). */
export const deployments = pgTable(
  "deployments",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").notNull().references(() => projects.id),
    environmentId: uuid("environment_id").notNull().references(() => environments.id),
    serverId: uuid("server_id").references(() => servers.id),
    kind: text("kind").notNull(),
    version: integer("version").notNull(),
    /** Platform vocabulary: pending queued building deploying running success failed cancelled rolled_back destroyed */
    status: text("status").notNull(),
    trigger: text("trigger").notNull(),
    triggeredBy: uuid("triggered_by").references(() => users.id),
    apiKeyId: uuid("api_key_id"),
    gitBranch: text("git_branch"),
    gitCommit: text("git_commit"),
    gitMessage: text("git_message"),
    rollbackFromId: uuid("rollback_from_id"),
    extraData: jsonb("extra_data").notNull().default({}),
    /** A deploy's module installs and upgrades as its agent reported them: [{name, action, from_version, to_version}]; null: none reported. */
    modulesResult: jsonb("modules_result"),
    /** A deploy's module tests as its agent reported them: {run, failed, errors, failures: [{test, module, kind, traceback}]}; null: none ran. */
    testsResult: jsonb("tests_result"),
    containerId: text("container_id"),
    imageTag: text("image_tag"),
    progressPercent: integer("progress_percent").notNull().default(0),
    currentStep: text("current_step"),
    stepsCompleted: integer("steps_completed").notNull().default(0),
    totalSteps: integer("total_steps").notNull().default(0),
    errorMessage: text("error_message"),
    /**
     * The idempotency key of the API request that made it (public spec 4.4) and whose key it
     * is: written in the operation's own transaction, so a retry after the answer was lost
     * finds this operation instead of making a second one.
     */
    idempotencyScope: text("idempotency_scope"),
    idempotencyKey: text("idempotency_key"),
    createdAt: ts("created_at").notNull().defaultNow(),
    startedAt: ts("started_at"),
    completedAt: ts("completed_at"),
  },
  (t) => [
    uniqueIndex("deployments_env_version_key").on(t.environmentId, t.version),
    index("deployments_idempotency_idx").on(t.idempotencyScope, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    // The database, not a check-then-insert, guarantees one active operation per environment.
    uniqueIndex("deployments_one_active_per_env")
      .on(t.environmentId)
      .where(sql`${t.status} in ('pending', 'queued', 'building', 'deploying', 'running')`),
    index("deployments_env_created_idx").on(t.environmentId, t.createdAt, t.id),
    index("deployments_org_created_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);

/**
 * Structured log entries of an operation, from its agent or from the control plane. Partitioned
 * by month on `ts` (migration 0022), hence the key (id, ts); ids are unique by their sequence.
 */
export const deploymentLogs = pgTable(
  "deployment_logs",
  {
    id: bigserial("id", { mode: "number" }).notNull(),
    organizationId: uuid("organization_id").notNull(),
    deploymentId: uuid("deployment_id").notNull(),
    ts: ts("ts").notNull(),
    /** debug | info | warning | error */
    level: text("level").notNull(),
    message: text("message").notNull(),
    step: text("step"),
    data: jsonb("data").notNull().default({}),
    tx: txId(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.ts] }),
    index("deployment_logs_deployment_idx").on(t.deploymentId, t.id),
    index("deployment_logs_org_tx_idx").on(t.organizationId, t.tx, t.id),
  ],
);
