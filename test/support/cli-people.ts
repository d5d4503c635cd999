// The two ways `berth` is signed in, for tests that run a command both ways: a person who ran
// `berth login` with e-mail and password (the stored session, platform API) and a CI job with
// BERTH_URL and BERTH_API_KEY in its environment (public API).
import { expect } from "vitest";
import { cliRunner, type CliResult } from "./cli.ts";
import type { CliSuite } from "./cli-suite.ts";
import { TEST_PASSWORD } from "./people.ts";

export type Run = (args: string[]) => Promise<CliResult>;

/** `berth` signed in as the suite's owner by `berth login --password-stdin`. */
export async function signedInPerson(s: CliSuite): Promise<Run> {
  const cli = cliRunner();
  const r = await cli.run(["--url", s.base, "login", "--email", s.owner.email, "--password-stdin"], { input: TEST_PASSWORD });
  expect(r.code, r.stderr).toBe(0);
  return (args) => cli.run(args);
}

/** `berth` with an API key in the environment (no login file). */
export function withApiKey(s: CliSuite, key: string): Run {
  const cli = cliRunner({ BERTH_URL: s.base, BERTH_API_KEY: key });
  return (args) => cli.run(args);
}

/** Runs and parses the --json output, failing with stderr when the command failed. */
export async function json<T = unknown>(run: Run, args: string[]): Promise<T> {
  const r = await run([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}
