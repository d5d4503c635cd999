// Where `berth login` keeps the control plane's URL and the credential: one JSON file in the
// user's config directory ($XDG_CONFIG_HOME/berth, else ~/.config/berth), readable by the user
// only (0600, in a 0700 folder), since it holds a session token or an API key.
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface StoredLogin {
  url: string;
  /** A session token (bst_…, platform API) or an API key (svc_live_…, public API). */
  token: string;
  kind: "session" | "api_key";
  /** Who signed in, for `berth whoami` without a request. */
  email?: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), ".config");
  return path.join(base, "berth");
}

export const configFile = (env: NodeJS.ProcessEnv = process.env) => path.join(configDir(env), "config.json");

export function readLogin(env: NodeJS.ProcessEnv = process.env): StoredLogin | null {
  let text: string;
  try {
    text = readFileSync(configFile(env), "utf8");
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(text) as Partial<StoredLogin>;
    return typeof v.url === "string" && typeof v.token === "string" && (v.kind === "session" || v.kind === "api_key") ? (v as StoredLogin) : null;
  } catch {
    return null;
  }
}

/** Written whole to a temporary file first, so a crash never leaves half a credential. */
export function writeLogin(login: StoredLogin, env: NodeJS.ProcessEnv = process.env): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = configFile(env);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(login, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

export function removeLogin(env: NodeJS.ProcessEnv = process.env): void {
  rmSync(configFile(env), { force: true });
}
