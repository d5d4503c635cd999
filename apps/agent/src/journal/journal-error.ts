// The journal's one error type; `code` is stable so callers branch on it, not on messages.

export type JournalErrorCode =
  | "invalid_input"
  | "unknown_command"
  | "invalid_transition"
  | "schema_too_new";

export class JournalError extends Error {
  readonly code: JournalErrorCode;

  constructor(code: JournalErrorCode, message: string) {
    super(message);
    this.name = "JournalError";
    this.code = code;
  }
}
