// `berth login`, `whoami`, `logout` as a person runs them: the credential is stored only once the
// control plane accepted it, in a 0600 file in a 0700 folder; a refused one exits 3 and stores
// nothing; BERTH_API_KEY in the environment beats the stored login.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { cliRunner } from "../support/cli.ts";
import { cliSuite } from "../support/cli-suite.ts";
import { TEST_PASSWORD } from "../support/people.ts";

const s = cliSuite();
const loginFile = (configHome: string) => path.join(configHome, "berth", "config.json");

it("a password from stdin signs in: the session is stored 0600 in a 0700 folder, whoami names the person", async () => {
  const cli = cliRunner();
  const r = await cli.run(["--url", s.base, "login", "--email", s.owner.email, "--password-stdin"], { input: `${TEST_PASSWORD}\n` });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(`Signed in to ${s.base} as ${s.owner.email}`);
  const file = loginFile(cli.configHome);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
  const stored = JSON.parse(readFileSync(file, "utf8"));
  expect(stored).toMatchObject({ url: s.base, kind: "session", email: s.owner.email });
  expect(stored.token).toMatch(/^bst_/);

  const who = await cli.run(["whoami", "--json"]);
  expect(who.code).toBe(0);
  const me = JSON.parse(who.stdout);
  expect(me.user.email).toBe(s.owner.email);
  expect(me.organizations.map((o: { id: string }) => o.id)).toContain(s.d.organization_id);

  // logout ends the session on the control plane too: the token is refused afterwards.
  const out = await cli.run(["logout"]);
  expect(out.code).toBe(0);
  expect(existsSync(file)).toBe(false);
  const res = await fetch(`${s.base}/api/v1/me`, { headers: { authorization: `Bearer ${stored.token}` } });
  expect(res.status).toBe(401);
});

it("a wrong password is refused with the API's message: exit 3, nothing stored", async () => {
  const cli = cliRunner();
  const r = await cli.run(["--url", s.base, "login", "--email", s.owner.email, "--password-stdin"], { input: "not the password" });
  expect(r.code).toBe(3);
  expect(r.stdout).toBe("");
  expect(r.stderr).toContain("(invalid_credentials)");
  expect(existsSync(loginFile(cli.configHome))).toBe(false);
});

it("an API key is checked, then stored; a refused one exits 3 and stores nothing", async () => {
  const cli = cliRunner();
  const bad = await cli.run(["--url", s.base, "login", "--api-key-stdin"], { input: "svc_live_rw_notakey" });
  expect(bad.code).toBe(3);
  expect(existsSync(loginFile(cli.configHome))).toBe(false);

  const r = await cli.run(["--url", s.base, "login", "--api-key-stdin", "--json"], { input: `${s.d.api_keys.org_rw}\n` });
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ url: s.base, kind: "api_key" });
  expect(JSON.parse(readFileSync(loginFile(cli.configHome), "utf8"))).toEqual({ url: s.base, token: s.d.api_keys.org_rw, kind: "api_key" });
  expect(statSync(loginFile(cli.configHome)).mode & 0o777).toBe(0o600);

  const who = await cli.run(["whoami", "--json"]);
  expect(JSON.parse(who.stdout)).toMatchObject({ kind: "api_key", url: s.base, projects: 1 });
});

it("the first login needs a URL: a usage error, exit 2", async () => {
  const r = await cliRunner().run(["login", "--email", "a@example.test", "--password-stdin"], { input: "x" });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("--url");
});

it("BERTH_URL and BERTH_API_KEY beat the stored login", async () => {
  const cli = cliRunner();
  await cli.run(["--url", s.base, "login", "--email", s.owner.email, "--password-stdin"], { input: TEST_PASSWORD });
  const asPerson = JSON.parse((await cli.run(["whoami", "--json"])).stdout);
  expect(asPerson.user.email).toBe(s.owner.email);
  const asKey = await cli.run(["whoami", "--json"], { env: { BERTH_URL: s.base, BERTH_API_KEY: s.d.api_keys.org_ro } });
  expect(JSON.parse(asKey.stdout)).toMatchObject({ kind: "api_key" });
  // A refused key in the environment is refused, even with a good stored login.
  const refused = await cli.run(["whoami"], { env: { BERTH_API_KEY: "svc_live_ro_wrong" } });
  expect(refused.code).toBe(3);
});

it("an unreachable control plane exits 4", async () => {
  const r = await cliRunner().run(["--url", "http://127.0.0.1:9", "login", "--api-key", "svc_live_rw_x"]);
  expect(r.code).toBe(4);
  expect(r.stderr).toContain("cannot be reached");
});
