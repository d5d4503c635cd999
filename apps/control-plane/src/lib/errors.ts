// One error type with a stable code and no HTTP status: services, repos and hooks throw it,
// and the HTTP layer answers with the status error-codes.ts gives the code (error-handler.ts).
// The same codes travel in protocol error frames.
import type { ErrorCode } from "./error-codes.ts";

export type { ErrorCode } from "./error-codes.ts";

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** HTTP headers the answer carries (WWW-Authenticate, Retry-After): set by the hooks that own them. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "DomainError";
  }
}

export const notFound = (what: string) => new DomainError("not_found", `${what} not found`);

/**
 * A PostgreSQL unique violation (23505), whether raised by pg directly or wrapped by drizzle;
 * with `constraint`, only one of that unique index or constraint.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } } | null;
  const raised = e?.code === "23505" ? e : e?.cause?.code === "23505" ? e.cause : undefined;
  return raised !== undefined && (constraint === undefined || raised.constraint === constraint);
}
