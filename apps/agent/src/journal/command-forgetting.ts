// Forgetting finished commands without letting one run twice. A finished command is forgotten
// only once it is older than the caller's keep cutoff and past its own expiry, so a replay of
// its id is refused as expired; and the highest seq of a command that ran and was forgotten
// stays in meta (`forgotten_command_seq`), so an unknown command at or below it is refused as
// a replay even when its window looks open (a clock that ran ahead and was set back).
import type { JournalDb } from "./database.ts";
import type { PruneCutoffs } from "./journal-types.ts";
import type { Meta } from "./meta.ts";

interface FinishedRow {
  command_id: string;
  seq: number | null;
  status: "done" | "rejected";
  command: string;
}

export interface CommandForgetting {
  prune(cutoffs: PruneCutoffs): number;
  forgottenSeq(): number;
}

export function createCommandForgetting(deps: { db: JournalDb; meta: Meta }): CommandForgetting {
  const { db, meta } = deps;

  const selectFinished = db.prepare<[string], FinishedRow>(
    "SELECT command_id, seq, status, command FROM commands WHERE status IN ('done', 'rejected') AND finished_at < ?",
  );
  const deleteOne = db.prepare<[string]>("DELETE FROM commands WHERE command_id = ?");

  const prune = db.transaction((cutoffs: PruneCutoffs): number => {
    const expiredBefore = cutoffs.expiredBefore.getTime();
    let removed = 0;
    let highestRun = 0;
    for (const row of selectFinished.all(cutoffs.finishedBefore.toISOString())) {
      // A rejection whose seq could not be trusted (bad signature, unknown key) never ran and
      // fails the same way when replayed, whatever expiry it claims.
      if (row.seq !== null && !expiredLongAgo(row.command, expiredBefore)) continue;
      deleteOne.run(row.command_id);
      removed += 1;
      // Only a command that ran needs refusing again. A rejection never ran, and some carry a
      // seq that is not this server's (wrong_server, a malformed command): they never move it.
      if (row.status === "done" && row.seq !== null) highestRun = Math.max(highestRun, row.seq);
    }
    if (highestRun > 0) meta.raise("forgotten_command_seq", highestRun);
    return removed;
  });

  return { prune, forgottenSeq: () => meta.get("forgotten_command_seq") };
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

// Run at every open, after the schema's migrations. Not a migration itself: a new schema
// version would stop an older agent (a rolled-back self-update) from opening the journal at
// all, and older agents ignore a meta key they do not know. A journal an older agent kept has
// already forgotten commands after a week whatever their expiry, and kept no mark: every
// command it forgot has a seq below those it still holds (commands finish within minutes of
// arriving, roughly in seq order), so the mark starts just below the lowest seq still held,
// or at the highest seq ever accepted when none is.
export function ensureForgottenSeq(db: JournalDb): void {
  const present = db.prepare("SELECT 1 FROM meta WHERE key = 'forgotten_command_seq'").get();
  if (present !== undefined) return;
  db.prepare(`
    INSERT OR IGNORE INTO meta (key, value)
    SELECT 'forgotten_command_seq', coalesce(
      (SELECT max(min(seq) - 1, 0) FROM commands WHERE status <> 'rejected'),
      (SELECT value FROM meta WHERE key = 'last_command_seq'),
      0)`).run();
}
