// Each staging or development environment's SMTP login on the server's catcher: the user is
// the environment's id, the password generated once and kept (0600) in the environment's
// folder like its other secrets, never sent anywhere. A login names the environment whose
// box the mail goes to, so one environment cannot put mail in another's.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { UUID_PATTERN } from "@berth/protocol";
import { writeFileAtomic } from "../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../state/state-dir.ts";

const UUID = new RegExp(UUID_PATTERN);

const passwordFile = (stateDir: string, environmentId: string) => join(stateDir, "environments", environmentId, "smtp-password");

/** The environment's password, made at its first deploy that catches mail. */
export async function mailPassword(stateDir: string, environmentId: string): Promise<string> {
  const file = passwordFile(stateDir, environmentId);
  const stored = (await readFile(file, "utf8").catch(() => "")).trim();
  if (stored !== "") return stored;
  const password = randomBytes(24).toString("base64url");
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, `${password}\n`, SECRET_FILE_MODE);
  return password;
}

/** True when `password` is the environment's; false for any other user or password (no file: no login). */
export async function checkMailLogin(stateDir: string, username: string, password: string): Promise<boolean> {
  // The user becomes a path: only a UUID is looked up.
  if (!UUID.test(username)) return false;
  const stored = (await readFile(passwordFile(stateDir, username), "utf8").catch(() => "")).trim();
  if (stored === "") return false;
  // Digests compare in constant time whatever the lengths.
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(stored), digest(password));
}
