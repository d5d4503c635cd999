// Turning a failed schema check into one line a peer or a log reader can act on.
import type { TLocalizedValidationError } from "typebox/error";

/** A compiled check of any schema (typebox's Compile). */
export interface SchemaCheck {
  Check(value: unknown): boolean;
  Errors(value: unknown): TLocalizedValidationError[];
}

// A branch of a union that did not match is no news: the union's own error says the value
// matched none of them (as "Expected union value" did in typebox 0.34).
const inAlternative = (error: TLocalizedValidationError) => /\/(anyOf|oneOf)\/\d+(\/|$)/.test(error.schemaPath);

/** The first violation of a list of typebox errors, as "<json pointer>: <reason>". */
export function describeFirstError(errors: readonly TLocalizedValidationError[]): string {
  const error = errors.find((e) => !inAlternative(e)) ?? errors[0];
  if (error === undefined) return "invalid value";
  // A property the schema has no field for (additionalProperties false): named by its own path.
  if (error.keyword === "boolean" && error.schemaPath.endsWith("/additionalProperties")) return `${error.instancePath || "/"}: Unexpected property`;
  if (error.keyword === "additionalProperties") return `${error.instancePath}/${error.params.additionalProperties[0] ?? ""}: Unexpected property`;
  return `${error.instancePath || "/"}: ${error.message}`;
}

/** The first violation as "<json pointer>: <reason>". */
export function firstError(check: SchemaCheck, value: unknown): string {
  return describeFirstError(check.Errors(value));
}

/** The first violation is a property the schema does not know (a newer peer's field). */
export function isUnknownProperty(check: SchemaCheck, value: unknown): boolean {
  const error = check.Errors(value).find((e) => !inAlternative(e));
  return error !== undefined && (error.keyword === "additionalProperties" || (error.keyword === "boolean" && error.schemaPath.endsWith("/additionalProperties")));
}
