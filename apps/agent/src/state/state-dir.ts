// The agent's state directory: identity, private key, journal and link status, readable by
// the agent's user only (the key and command results are secrets).
import { chmodSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";

export interface StatePaths {
  dir: string;
  identity: string;
  privateKey: string;
  journal: string;
  linkStatus: string;
}

export function statePaths(dir: string): StatePaths {
  return {
    dir,
    identity: join(dir, "identity.json"),
    privateKey: join(dir, "agent.key"),
    journal: join(dir, "journal.db"),
    linkStatus: join(dir, "link-status.json"),
  };
}

export const STATE_DIR_MODE = 0o700;
export const SECRET_FILE_MODE = 0o600;

/** Creates the directory 0700, and tightens one an older install or a person left open. */
export function ensureStateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: STATE_DIR_MODE });
  if ((statSync(dir).mode & 0o777) !== STATE_DIR_MODE) chmodSync(dir, STATE_DIR_MODE);
}
