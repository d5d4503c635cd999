// How a handler's end becomes the `command.result` payload: ok with output, or an error
// with a stable code the control plane and the user can act on.
import { CodedError } from "../../coded-error.ts";
import { DockerError } from "../../docker/docker-client.ts";
import { DeadlineError } from "../../with-deadline.ts";
import { CommandError, type JsonObject } from "./handler-types.ts";

export interface ErrorBody {
  code: string;
  message: string;
}

export type CommandOutcome = { ok: true; result: JsonObject } | { ok: false; error: ErrorBody; result?: JsonObject };

/** A failure's outcome: its error, and what the handler did before it when its CommandError says. */
export function failedOutcome(error: unknown, signal: AbortSignal): CommandOutcome {
  const result = error instanceof CommandError ? error.result : undefined;
  return { ok: false, error: failureOf(error, signal), ...(result === undefined ? {} : { result }) };
}

export function failureOf(error: unknown, signal: AbortSignal): ErrorBody {
  // A cancel or the run deadline wins over whatever the handler threw while stopping.
  if (signal.aborted && signal.reason instanceof CommandError) return body(signal.reason);
  if (error instanceof CodedError || error instanceof DockerError || error instanceof DeadlineError) {
    return body(error);
  }
  return { code: "agent_error", message: error instanceof Error ? error.message : String(error) };
}

function body(error: { code: string; message: string }): ErrorBody {
  return { code: error.code, message: error.message };
}
