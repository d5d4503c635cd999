// The self-update marker (executor/agent-update/agent-update.ts writes it, the unit's update-guard counts
// starts in it): once the link is up, the update is committed and the marker goes.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

export const UPDATE_MARKER = "update-pending";

export interface UpdateMarker {
  from: string;
  to: string;
  attempts: number;
}

export function readUpdateMarker(stateDir: string): UpdateMarker | null {
  const file = join(stateDir, UPDATE_MARKER);
  if (!existsSync(file)) return null;
  const fields = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) fields.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  return { from: fields.get("from") ?? "?", to: fields.get("to") ?? "?", attempts: Number(fields.get("attempts") ?? 0) };
}

export function clearUpdateMarker(stateDir: string): void {
  rmSync(join(stateDir, UPDATE_MARKER), { force: true });
}
