// How every Docker request is made: under a deadline, aborted (socket freed) when it passes
// it, and failing with one error type that says whether the engine was reachable at all.
import { DeadlineError, withDeadline } from "../with-deadline.ts";

export class DockerError extends Error {
  /** docker_unavailable: the engine could not be reached; docker_error: it answered with an error. */
  readonly code: "docker_unavailable" | "docker_error";
  /** The engine's HTTP status (404 for "no such object"), when it answered. */
  readonly statusCode: number | null;

  constructor(what: string, cause: unknown) {
    const reason = reasonOf(cause);
    const code = unreachable(cause) ? "docker_unavailable" : "docker_error";
    super(code === "docker_unavailable" ? `Docker engine unreachable (${what}): ${reason}` : `${what} failed: ${reason}`);
    this.name = "DockerError";
    this.code = code;
    const status = (cause as { statusCode?: unknown } | null)?.statusCode;
    this.statusCode = typeof status === "number" ? status : null;
  }
}

export type DockerCall = <T>(what: string, ms: number, run: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/** Runs one request under a deadline; the signal is handed to dockerode so the socket is freed. */
export const dockerCall: DockerCall = async (what, ms, run) => {
  const controller = new AbortController();
  try {
    return await withDeadline(run(controller.signal), ms, what);
  } catch (error) {
    if (error instanceof DeadlineError) {
      // Frees the socket: otherwise the request would live on until the engine answers.
      controller.abort();
      throw error;
    }
    if (error instanceof DockerError) throw error;
    throw new DockerError(what, error);
  }
};

export function isNotFound(error: unknown): boolean {
  return error instanceof DockerError && error.statusCode === 404;
}

function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ECONNREFUSED" || code === "EACCES" || code === "ECONNRESET";
}

// dockerode puts the engine's own explanation in `json.message`; its `message` adds the
// HTTP status text around it, which says less.
function reasonOf(cause: unknown): string {
  const json = (cause as { json?: unknown } | null)?.json;
  if (typeof json === "object" && json !== null && typeof (json as { message?: unknown }).message === "string") {
    return (json as { message: string }).message;
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return message.replace(/^\(HTTP code \d+\) [^-]* - /, "").trim();
}
