// Option values checked for their syntax only (a number is a number); what values are allowed
// is the API's to say, and its validation messages are shown as they are.
import { InvalidArgumentError } from "commander";

/** A commander parser for a whole number option, e.g. `.option("--cpu <cores>", "…", wholeNumber)`. */
export function wholeNumber(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError("Not a whole number.");
  return Number(value);
}

/** A commander parser for an option given several times: `--alias a --alias b`. */
export function repeated(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
