// Forgetting finished commands without letting one run twice: a finished command is forgotten
// only once it is older than the caller's keep cutoff and past its own expiry, so a replay of
// its id is refused as expired.
import type Database from "better-sqlite3";
import type { PruneCutoffs } from "./journal-types.ts";

interface FinishedRow {
  command_id: string;
  seq: number | null;
  command: string;
}

export interface CommandForgetting {
  prune(cutoffs: PruneCutoffs): number;
}

export function createCommandForgetting(deps: { db: Database.Database }): CommandForgetting {
  const { db } = deps;
  const selectFinished = db.prepare<[string], FinishedRow>(
    "SELECT command_id, seq, command FROM commands WHERE status IN ('done', 'rejected') AND finished_at < ?",
  );
  const deleteOne = db.prepare<[string]>("DELETE FROM commands WHERE command_id = ?");

  const prune = db.transaction((cutoffs: PruneCutoffs): number => {
    const expiredBefore = cutoffs.expiredBefore.getTime();
    let removed = 0;
    for (const row of selectFinished.all(cutoffs.finishedBefore.toISOString())) {
      // A rejection whose seq could not be trusted (bad signature, unknown key) never ran and
      // fails the same way when replayed, whatever expiry it claims.
      if (row.seq !== null && !expiredLongAgo(row.command, expiredBefore)) continue;
      deleteOne.run(row.command_id);
      removed += 1;
    }
    return removed;
  });

  return { prune };
}

/** True when the signed command's `expires_at` is before `expiredBefore`, or unreadable (it can never verify). */
function expiredLongAgo(commandJson: string, expiredBefore: number): boolean {
  let expiresAt = NaN;
  try {
    const command = JSON.parse(commandJson) as { expires_at?: unknown };
    if (typeof command.expires_at === "string") expiresAt = Date.parse(command.expires_at);
  } catch {
    // Stored by the journal itself as JSON; unreadable means it can never verify either.
  }
  return Number.isNaN(expiresAt) || expiresAt < expiredBefore;
}
