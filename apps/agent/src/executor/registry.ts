// The command types this build runs. A type missing here is rejected as
// `unsupported_command` before it is accepted, and is not announced in `hello`.
import type { Clock } from "../clock.ts";
import type { Journal } from "../journal/journal-types.ts";
import { createDiagnosticsHandler } from "./diagnostics.ts";
import type { HandlerRegistry } from "./handler-types.ts";

export interface RegistryDeps {
  journal: Pick<Journal, "stats">;
  stateDir: string;
  startedAt: Date;
  clock: Clock;
}

export function createRegistry(deps: RegistryDeps): HandlerRegistry {
  return {
    diagnostics: createDiagnosticsHandler(deps),
  };
}
