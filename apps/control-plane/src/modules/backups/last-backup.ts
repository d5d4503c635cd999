// How an environment's last backup ended, as both APIs show it on the environment: the
// dashboard's red mark while it says failed or missed (until a later backup succeeds).
// Written by the backups trigger (migration 0016) and the scheduler's missed slots.
import { Type } from "typebox";
import { Nullable, Timestamp } from "../../lib/http-schemas.ts";

export const LastBackup = Nullable(
  Type.Object(
    {
      status: Type.Union([Type.Literal("completed"), Type.Literal("failed"), Type.Literal("missed")], {
        description: "completed; failed (the backup failed) or missed (a scheduled slot passed without a completed backup): a red mark until a later backup succeeds",
      }),
      at: Timestamp,
      error: Nullable(Type.String({ description: "Why it failed or was missed" })),
      backup_id: Nullable(Type.String({ format: "uuid" })),
      backup_type: Nullable(Type.String()),
      slot_at: Nullable(Timestamp),
    },
    { title: "LastBackup", description: "How the last manual or scheduled backup (or scheduled slot) ended; null: none yet" },
  ),
);

export type LastBackupView = { status: "completed" | "failed" | "missed"; at: string; error: string | null; backup_id: string | null; backup_type: string | null; slot_at: string | null } | null;

/** The stored column as the APIs show it (anything unexpected reads as none). */
export function lastBackupView(column: unknown): LastBackupView {
  if (!column || typeof column !== "object") return null;
  const c = column as Record<string, unknown>;
  if (c.status !== "completed" && c.status !== "failed" && c.status !== "missed") return null;
  if (typeof c.at !== "string") return null;
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  return { status: c.status, at: new Date(c.at).toISOString(), error: str(c.error), backup_id: str(c.backup_id), backup_type: str(c.backup_type), slot_at: str(c.slot_at) };
}
