// The berth CLI's executable for the tests that need it, built once and reused: the build is
// skipped when its inputs did not change (installers/build/build-cli.ts), under the same lock
// as the agent's build.
import type { BuiltExecutable } from "../../installers/build/build-agent.ts";
import { buildCliExecutable } from "../../installers/build/build-cli.ts";
import { withLock } from "./agent-executable.ts";

const log = (line: string) => process.stderr.write(`[cli executable] ${line}\n`);

/** installers/dist/berth-linux-x64, as `npm run build:cli` makes it. */
export function cliExecutable(): Promise<BuiltExecutable> {
  return withLock(() => buildCliExecutable({ log }));
}
