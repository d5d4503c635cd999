// `berth login`, `berth logout`, `berth whoami`: who the other commands act as. A person signs in
// with e-mail and password (a session token for the platform API); a CI job with an API key (the
// public API). The credential is stored only once the control plane accepted it.
import type { Command } from "commander";
import { ok, platformClient, publicClient } from "@berth/protocol/api-client";
import { readLogin, removeLogin, writeLogin, type StoredLogin } from "../config-file.ts";
import { USER_AGENT, type Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { ask, interactive, readStdin } from "../prompt.ts";

interface LoginOptions {
  email?: string;
  passwordStdin?: boolean;
  apiKey?: string;
  apiKeyStdin?: boolean;
}

const headers = { "user-agent": USER_AGENT };

export function registerLogin(program: Command, context: () => Context): void {
  program
    .command("login")
    .description("Sign in to a control plane (e-mail and password, or an API key) and store the credential (0600)")
    .option("--email <email>", "the e-mail address (asked on a terminal when left out)")
    .option("--password-stdin", "read the password from stdin, for scripts")
    .option("--api-key <key>", "sign in with an API key instead (public API only; visible in the process list: prefer --api-key-stdin)")
    .option("--api-key-stdin", "read the API key from stdin")
    .addHelpText(
      "after",
      `
The first login needs the control plane's URL (--url or BERTH_URL); later ones reuse it.

Examples:
  $ berth --url https://berth.example.com login
  $ printf '%s' "$PASSWORD" | berth login --email ada@example.com --password-stdin
  $ printf '%s' "$CI_API_KEY" | berth --url https://berth.example.com login --api-key-stdin`,
    )
    .action(async (opts: LoginOptions) => {
      const ctx = context();
      const url = ctx.url();
      if (!url) throw new CliError("Which control plane? Pass --url https://… or set BERTH_URL.", EXIT.usage, "url_missing");
      const login = opts.apiKey !== undefined || opts.apiKeyStdin ? await withApiKey(url, opts) : await withPassword(url, opts);
      const file = writeLogin(login, ctx.env);
      const who = login.kind === "session" ? login.email : "an API key";
      ctx.out.result({ url: login.url, kind: login.kind, email: login.email ?? null, config_file: file }, () => ctx.out.line(`Signed in to ${login.url} as ${who}.`));
    });

  program
    .command("logout")
    .description("Sign out: end the session on the control plane and remove the stored credential")
    .addHelpText("after", "\nExample:\n  $ berth logout")
    .action(async () => {
      const ctx = context();
      const stored = readLogin(ctx.env);
      if (!stored) {
        ctx.out.result({ signed_out: false }, () => ctx.out.line("Not signed in."));
        return;
      }
      if (stored.kind === "session") {
        // A session that already expired or was revoked is as good as ended.
        const res = await platformClient({ url: stored.url, token: stored.token, headers }).POST("/auth/logout");
        if (!res.response.ok && res.response.status !== 401) ctx.out.note(`The control plane did not end the session (HTTP ${res.response.status}); the stored credential is removed anyway.`);
      }
      removeLogin(ctx.env);
      ctx.out.result({ signed_out: true, url: stored.url }, () => ctx.out.line(`Signed out of ${stored.url}.`));
    });

  program
    .command("whoami")
    .description("Show who the commands act as, checked with the control plane")
    .addHelpText("after", "\nExamples:\n  $ berth whoami\n  $ BERTH_URL=… BERTH_API_KEY=… berth whoami --json")
    .action(async () => {
      const ctx = context();
      const c = ctx.credentials();
      if (c.kind === "session") {
        const me = await ok(ctx.platform().GET("/me"));
        ctx.out.result(me, () =>
          ctx.out.record([
            ["URL", c.url],
            ["Signed in as", `${me.user.name} <${me.user.email}>`],
            ["Organisations", me.organizations.map((o) => `${o.name} (${o.id}, ${o.role})`)],
          ]),
        );
        return;
      }
      // An API key has no read-one endpoint: a list it may read proves it is accepted.
      const projects = await ok(ctx.public().GET("/projects", { params: { query: { limit: 1 } } }));
      const value = { url: c.url, kind: c.kind, key_prefix: keyPrefix(c.token), projects: projects.pagination.total };
      ctx.out.result(value, () =>
        ctx.out.record([
          ["URL", c.url],
          ["Signed in with", `API key ${value.key_prefix}…`],
          ["Projects it sees", value.projects],
        ]),
      );
    });
}

async function withPassword(url: string, opts: LoginOptions): Promise<StoredLogin> {
  const email = opts.email ?? (interactive() ? (await ask("E-mail: ")).trim() : undefined);
  if (!email) throw new CliError("No terminal to ask the e-mail address: pass --email.", EXIT.usage, "email_missing");
  let password: string;
  if (opts.passwordStdin) password = await readStdin();
  else if (interactive()) password = await ask("Password: ", { hidden: true });
  else throw new CliError("No terminal to ask the password: pass --password-stdin and write it to stdin.", EXIT.usage, "password_missing");
  const session = await ok(platformClient({ url, headers }).POST("/auth/login", { body: { email, password } }));
  return { url, token: session.token, kind: "session", email: session.user.email };
}

async function withApiKey(url: string, opts: LoginOptions): Promise<StoredLogin> {
  const key = (opts.apiKeyStdin ? await readStdin() : (opts.apiKey ?? "")).trim();
  if (!key) throw new CliError("The API key is empty.", EXIT.usage, "api_key_missing");
  // Checked before it is stored: a refused key (401) ends here with exit 3.
  await ok(publicClient({ url, token: key, headers }).GET("/projects", { params: { query: { limit: 1 } } }));
  return { url, token: key, kind: "api_key" };
}

/** Enough of a key to tell it apart, never the secret part. */
function keyPrefix(key: string): string {
  return key.slice(0, Math.min(14, Math.floor(key.length / 3)));
}
