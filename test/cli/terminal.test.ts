// What `berth` does only on a terminal: it asks for the e-mail and the password (never echoing
// the password), asks before deleting (and keeps the project on "no"), and uses colours.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { json, withApiKey } from "../support/cli-people.ts";
import { cliSuite } from "../support/cli-suite.ts";
import { runInTerminal } from "../support/cli-terminal.ts";
import { TEST_PASSWORD } from "../support/people.ts";

const s = cliSuite();

function terminalEnv() {
  const home = mkdtempSync(path.join(tmpdir(), "berth-cli-tty-"));
  return { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: home };
}

it("asks for the e-mail and the password, and never shows the password", async () => {
  const env = terminalEnv();
  const r = await runInTerminal(["--url", s.base, "login"], env, [
    ["E-mail: ", s.owner.email],
    ["Password: ", TEST_PASSWORD],
  ]);
  expect(r.code, r.stdout).toBe(0);
  expect(r.stdout).toContain(`Signed in to ${s.base} as ${s.owner.email}`);
  expect(r.stdout).not.toContain(TEST_PASSWORD);
  expect(JSON.parse(readFileSync(path.join(env.XDG_CONFIG_HOME, "berth", "config.json"), "utf8"))).toMatchObject({ kind: "session", email: s.owner.email });
});

it("asks before deleting: 'n' keeps the project (exit 1), 'y' deletes it", async () => {
  const run = withApiKey(s, s.d.api_keys.org_rw);
  const project = await json<{ id: string }>(run, ["projects", "create", "--name", "to delete", "--server", s.d.server_id]);
  const env = { ...terminalEnv(), BERTH_URL: s.base, BERTH_API_KEY: s.d.api_keys.org_rw };

  const kept = await runInTerminal(["projects", "delete", project.id], env, [["[y/N] ", "n"]]);
  expect(kept.code).toBe(1);
  expect(kept.stdout).toContain("Cancelled.");
  expect((await json<{ id: string }[]>(run, ["projects", "list"])).map((p) => p.id)).toContain(project.id);

  const deleted = await runInTerminal(["projects", "delete", project.id], env, [["[y/N] ", "y"]]);
  expect(deleted.code, deleted.stdout).toBe(0);
  expect((await json<{ id: string }[]>(run, ["projects", "list"])).map((p) => p.id)).not.toContain(project.id);
});

it("uses colours on a terminal, and not with --no-color", async () => {
  const env = { ...terminalEnv(), BERTH_URL: s.base, BERTH_API_KEY: s.d.api_keys.org_ro };
  expect((await runInTerminal(["projects", "list"], env)).stdout).toContain("\x1b[1mID");
  expect((await runInTerminal(["projects", "list", "--no-color"], env)).stdout).not.toContain("\x1b[");
});
