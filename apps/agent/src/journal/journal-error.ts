// The journal's one error type; `code` is stable so callers branch on it, not on messages.
import { CodedError } from "../coded-error.ts";

export type JournalErrorCode =
  | "invalid_input"
  | "unknown_command"
  | "invalid_transition"
  | "schema_too_new";

export class JournalError extends CodedError<JournalErrorCode> {
  override name = "JournalError";
}
