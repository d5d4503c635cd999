// One error type with a stable code. Services throw it; the HTTP layer maps it to a status
// in one place (error-handler.ts). The same codes travel in protocol error frames.

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const conflict = (code: string, message: string) => new ApiError(409, code, message);
export const badRequest = (code: string, message: string, details?: unknown) => new ApiError(400, code, message, details);
export const forbidden = (code: string, message: string) => new ApiError(403, code, message);

/** A PostgreSQL unique violation (23505), whether raised by pg directly or wrapped by drizzle. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null;
  return e?.code === "23505" || e?.cause?.code === "23505";
}
