// How the CLI ends: one error type carrying the exit code, so every command fails the same way
// and scripts can trust the codes (printed by `berth --help`).
import { BerthApiError } from "@berth/protocol/api-client";

export const EXIT = {
  /** Done, or the deployment followed to its end succeeded. */
  ok: 0,
  /** The API refused (its code and message are printed) or the followed operation failed. */
  failed: 1,
  /** The command line is wrong: unknown command, missing argument, bad option value. */
  usage: 2,
  /** Not signed in, or the credentials were refused (401). */
  auth: 3,
  /** The control plane could not be reached. */
  unreachable: 4,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  done (with --follow: the deployment succeeded)
  1  the API refused, or the followed deployment failed or was cancelled
  2  the command line is wrong
  3  not signed in, or the credentials were refused
  4  the control plane cannot be reached`;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
    /** A stable code for --json output: the API's, or the CLI's own. */
    readonly code: string = "failed",
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** Any failure as a CliError: the API's own code and message, or a network failure in words. */
export function asCliError(err: unknown, url?: string): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof BerthApiError) {
    const exit = err.status === 401 ? EXIT.auth : EXIT.failed;
    const details = err.details?.length ? `\n${err.details.map((d) => `  ${d.path}: ${d.message}`).join("\n")}` : "";
    return new CliError(`${err.message} (${err.code})${details}`, exit, err.code);
  }
  if (err instanceof TypeError && /fetch failed/i.test(err.message)) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return new CliError(`The control plane${url ? ` at ${url}` : ""} cannot be reached${cause?.code ? ` (${cause.code})` : ""}.`, EXIT.unreachable, "unreachable");
  }
  return new CliError(err instanceof Error ? err.message : String(err));
}
