// Why a command could not be built. The dispatcher fails the operation with it (its error
// message and an error log line carry the code) and goes on with the next one.
import { DomainError } from "../../../lib/errors.ts";

export class DispatchError extends Error {
  override name = "DispatchError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The code and message an operation fails with when building its command threw `err`. */
export function dispatchFailure(err: unknown): { code: string; message: string } {
  if (err instanceof DispatchError || err instanceof DomainError) return { code: err.code, message: err.message };
  return { code: "command_not_built", message: err instanceof Error ? err.message : String(err) };
}

/** The operation's error message: the command never left, so nothing ran on the server. */
export function dispatchFailureMessage(f: { code: string; message: string }): string {
  return `The command could not be built (${f.code}): ${f.message}. Nothing ran on the server`;
}
