// `npm run admin:create -- --email ada@example.com --name "Ada Lovelace"`: makes the first
// (or another) portal administrator of this control plane, in its database (DATABASE_URL, or
// the embedded server). Whoever can run this on the control plane's machine already holds
// its database, so it is the one way an administrator is made without an existing one; the
// API never makes one. The password comes from BERTH_ADMIN_PASSWORD or, without it, the
// first line of standard input, never from the command line (process lists and shell
// history keep those). `--promote` makes an existing account an administrator instead.
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { adminPassword, loadConfig } from "../config.ts";
import { systemClock } from "../lib/clock.ts";
import { DomainError } from "../lib/errors.ts";
import { createAccountsRepo } from "../modules/auth/accounts.repo.ts";
import { PASSWORD_MIN_LENGTH } from "../modules/auth/passwords.ts";
import { createSessions } from "../modules/auth/sessions.ts";
import { openScriptDatabase } from "./script-database.ts";

const USAGE = "usage: npm run admin:create -- --email <address> --name <name> [--promote] [--json]  (password: BERTH_ADMIN_PASSWORD or stdin)";

function fail(message: string): never {
  process.stderr.write(`admin:create: ${message}\n`);
  process.exit(2);
}

async function readPassword(): Promise<string> {
  const fromEnv = adminPassword();
  if (fromEnv !== undefined) return fromEnv;
  if (process.stdin.isTTY) process.stderr.write("Password: ");
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return "";
}

let args: { email?: string | undefined; name?: string | undefined; promote?: boolean | undefined; json?: boolean | undefined };
try {
  args = parseArgs({
    options: { email: { type: "string" }, name: { type: "string" }, promote: { type: "boolean" }, json: { type: "boolean" } },
    strict: true,
  }).values;
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`);
}
if (!args.email || !/^[^\s@]+@[^\s@]+$/.test(args.email)) fail(`--email <address> is required\n${USAGE}`);
if (!args.promote && !args.name) fail(`--name <name> is required for a new account\n${USAGE}`);

const { handle, close } = await openScriptDatabase(loadConfig());
try {
  const accounts = createAccountsRepo(handle.db);
  const existing = await accounts.userByEmail(args.email);
  let userId: string;
  if (args.promote) {
    if (!existing) fail(`no account has the address ${args.email}; leave out --promote to make one`);
    userId = existing.id;
  } else {
    if (existing) fail(`an account with the address ${args.email} exists; add --promote to make it an administrator`);
    const password = await readPassword();
    if (password.length < PASSWORD_MIN_LENGTH) fail(`the password needs at least ${PASSWORD_MIN_LENGTH} characters`);
    const sessions = createSessions({ accounts, clock: systemClock });
    try {
      userId = (await sessions.createUser({ email: args.email, name: args.name!, password, isPortalAdmin: true })).id;
    } catch (err) {
      if (err instanceof DomainError) fail(err.message);
      throw err;
    }
  }
  await accounts.makePortalAdmin(userId);
  const out = { user_id: userId, email: args.email, is_portal_admin: true, created: !args.promote };
  process.stdout.write(args.json ? `${JSON.stringify(out)}\n` : `${args.promote ? "Promoted" : "Created"} portal administrator ${args.email} (${userId})\n`);
} finally {
  await close();
}
