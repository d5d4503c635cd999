// Turning a failed schema check into one line a peer or a log reader can act on.
import type { TSchema } from "@sinclair/typebox";
import type { TypeCheck } from "@sinclair/typebox/compiler";

/** The first violation as "<json pointer>: <reason>". */
export function firstError(check: TypeCheck<TSchema>, value: unknown): string {
  const error = check.Errors(value).First();
  if (error === undefined) return "invalid value";
  return `${error.path === "" ? "/" : error.path}: ${error.message}`;
}
