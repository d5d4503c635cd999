// What every command gets: the output, and the control plane with the caller's credentials.
// Credentials come from, in this order: BERTH_URL with BERTH_API_KEY (or BERTH_TOKEN, a
// session token) in the environment, for CI jobs; then what `berth login` stored. --url
// overrides the URL of either.
import { platformClient, publicClient, type PlatformPaths, type PublicPaths } from "@berth/protocol/api-client";
import type { Client } from "openapi-fetch";
import { readLogin, type StoredLogin } from "./config-file.ts";
import { CliError, EXIT } from "./errors.ts";
import { Output } from "./output.ts";

export const USER_AGENT = "berth-cli/0.1";

export interface GlobalOptions {
  url?: string;
  json?: boolean;
  color?: boolean;
}

export class Context {
  constructor(
    readonly out: Output,
    private readonly opts: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  static from(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Context {
    return new Context(Output.detect(opts, env), opts, env);
  }

  /** The control plane's URL without signing in (for `berth login`). */
  url(): string | undefined {
    const url = this.opts.url ?? this.env.BERTH_URL ?? readLogin(this.env)?.url;
    return url?.replace(/\/+$/, "");
  }

  /** Who the commands act as; fails with exit code 3 when nobody is signed in. */
  credentials(): StoredLogin {
    const key = this.env.BERTH_API_KEY || undefined;
    const token = this.env.BERTH_TOKEN || undefined;
    const stored = readLogin(this.env);
    const url = this.url();
    const found: StoredLogin | null = key
      ? { url: url ?? "", token: key, kind: "api_key" }
      : token
        ? { url: url ?? "", token, kind: "session" }
        : stored
          ? { ...stored, url: url ?? stored.url }
          : null;
    if (!found) throw new CliError("Not signed in: run `berth login`, or set BERTH_URL and BERTH_API_KEY.", EXIT.auth, "not_signed_in");
    if (!found.url) throw new CliError("No control plane URL: pass --url or set BERTH_URL.", EXIT.usage, "url_missing");
    return found;
  }

  /** The platform API (sessions). An API key cannot use it: the command says so. */
  platform(what = "This command"): Client<PlatformPaths> {
    const c = this.credentials();
    if (c.kind !== "session") {
      throw new CliError(`${what} needs a signed-in person (\`berth login\` with e-mail and password); an API key reaches only the public API.`, EXIT.auth, "session_required");
    }
    return platformClient({ url: c.url, token: c.token, headers: { "user-agent": USER_AGENT } });
  }

  /** The public API (API keys). */
  public(what = "This command"): Client<PublicPaths> {
    const c = this.credentials();
    if (c.kind !== "api_key") {
      throw new CliError(`${what} needs an API key (\`berth login --api-key\`, or BERTH_API_KEY).`, EXIT.auth, "api_key_required");
    }
    return publicClient({ url: c.url, token: c.token, headers: { "user-agent": USER_AGENT } });
  }
}
