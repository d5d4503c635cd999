// Routes of an environment's backup schedule: the public API's (API keys) and the platform
// API's (sessions, for the dashboard); the same schema and rules on both.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import { personOf } from "../auth/session-principal.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { Scope } from "../../lib/scope.ts";
import { BACKUP_FREQUENCIES } from "./backup-slots.ts";
import { MAX_KEEP, TIME_PATTERN, type BackupSchedules } from "./backup-schedules.service.ts";

const Frequency = Type.Union([Type.Literal("hourly"), Type.Literal("daily"), Type.Literal("weekly")], {
  description: `One of ${BACKUP_FREQUENCIES.join(", ")}: hourly (at the minute of \`time\`), daily (at \`time\`) or weekly (on \`weekday\` at \`time\`)`,
});
const Time = Type.String({ pattern: TIME_PATTERN, description: "HH:MM, UTC" });
const Weekday = Type.Integer({ minimum: 1, maximum: 7, description: "ISO weekday of a weekly schedule: 1 Monday … 7 Sunday" });
const Keep = (name: string, max: number, d: number) =>
  Type.Integer({ minimum: 0, maximum: max, description: `The newest backup of each of the ${name} that have one, up to this many (default ${d})` });

export const BackupSchedule = Type.Object(
  {
    environment_id: Uuid,
    enabled: Type.Boolean({ description: "Scheduled backups are on (the default for every deployed environment)" }),
    frequency: Frequency,
    time: Time,
    weekday: Weekday,
    timezone: Type.Literal("UTC"),
    retention: Type.Object(
      { daily: Keep("days", MAX_KEEP.daily, 7), weekly: Keep("ISO weeks", MAX_KEEP.weekly, 4), monthly: Keep("months", MAX_KEEP.monthly, 3) },
      { description: "Grandfather-father-son retention of scheduled backups, applied after each one completes; manual and pre-deploy backups are never pruned by it" },
    ),
    next_run_at: Nullable(Timestamp),
    last_slot_at: Nullable(Timestamp),
    is_default: Type.Boolean({ description: "Never changed: the defaults apply" }),
    updated_at: Nullable(Timestamp),
  },
  { $id: "BackupSchedule", title: "BackupSchedule" },
);
const BackupScheduleRef = refTo(BackupSchedule);

const UpdateBackupSchedule = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    frequency: Type.Optional(Frequency),
    time: Type.Optional(Time),
    weekday: Type.Optional(Weekday),
    retention: Type.Optional(
      Type.Object(
        {
          daily: Type.Optional(Keep("days", MAX_KEEP.daily, 7)),
          weekly: Type.Optional(Keep("ISO weeks", MAX_KEEP.weekly, 4)),
          monthly: Type.Optional(Keep("months", MAX_KEEP.monthly, 3)),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const RULES =
  "Fields left out stay as they are. A change of frequency, time or weekday counts slots from now on. A due backup is created once (whatever the number " +
  "of control-plane replicas); slots skipped while the server was offline or the environment busy are caught up by one backup. A slot without a completed " +
  "backup 2 hours after it is reported as `backup.missed` (event, webhook, `last_backup` on the environment). 400 `backup_schedule_invalid` for a retention " +
  "that keeps nothing, 400 `validation_error` for a field out of range.";

function scheduleRoutes(
  service: BackupSchedules,
  base: string,
  params: ReturnType<typeof Type.Object>,
  scope: (request: { params: Record<string, string> }, write: boolean) => Promise<{ scope: Scope; environmentId: string }>,
  needs: { read: string; write: string },
): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addSchema(BackupSchedule);
    app.get(
      `${base}/backup-schedule`,
      {
        schema: {
          tags: ["Backups"],
          summary: "Get an environment's backup schedule",
          description: `When scheduled backups run and how many are kept. ${needs.read}`,
          params,
          response: { 200: BackupScheduleRef, ...errors(404) },
        },
      },
      async (request) => {
        const at = await scope(request as never, false);
        return service.get(at.scope, at.environmentId);
      },
    );

    app.patch(
      `${base}/backup-schedule`,
      {
        schema: {
          tags: ["Backups"],
          summary: "Change an environment's backup schedule",
          description: `${RULES} ${needs.write}`,
          params,
          body: UpdateBackupSchedule,
          response: { 200: BackupScheduleRef, ...errors(404) },
        },
      },
      async (request) => {
        const at = await scope(request as never, true);
        return service.update(at.scope, at.environmentId, request.body);
      },
    );
  };
}

/** /api/public/v1/environments/{id}/backup-schedule: any key of the environment reads, full-access keys change. */
export function backupSchedulesPublicRoutes(service: BackupSchedules): FastifyPluginAsyncTypebox {
  return scheduleRoutes(
    service,
    "/environments/:id",
    IdParams,
    async (request) => ({ scope: scopeOf(request as never), environmentId: request.params.id! }),
    { read: "Any key of the environment's organisation or project.", write: "Needs a full-access key." },
  );
}

/** /api/v1/environments/{env_id}/backup-schedule: project.backups.list reads, project.backups.create changes. */
export function backupSchedulesPlatformRoutes(deps: { schedules: BackupSchedules; environments: Pick<DeploymentsService, "environmentScope"> }): FastifyPluginAsyncTypebox {
  return scheduleRoutes(
    deps.schedules,
    "/environments/:env_id",
    Type.Object({ env_id: Uuid }),
    async (request, write) => {
      const envId = request.params.env_id!;
      const scope = await deps.environments.environmentScope(personOf(request as never), envId, write ? "project.backups.create" : "project.backups.list");
      return { scope, environmentId: envId };
    },
    { read: "Needs project.backups.list.", write: "Needs project.backups.create (project admins and up)." },
  );
}
