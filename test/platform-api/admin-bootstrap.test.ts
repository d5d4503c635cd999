// The first administrator is made by a command on the control plane's machine, never by SQL
// and never through the API: `npm run admin:create` against the control plane's database.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REPO_ROOT } from "../../installers/build/build-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient } from "../support/http.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.close();
});

/** Runs the command as an operator would, with the password from the environment or stdin. */
function createAdmin(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(REPO_ROOT, "node_modules/.bin/tsx"), ["apps/control-plane/src/scripts/create-admin.ts", ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: cp.url, BERTH_ADMIN_PASSWORD: "", ...opts.env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.stdin ?? "");
  });
}

const login = (email: string, password: string) => platformClient(cp.app, null).post("/auth/login", { email, password });

it("makes a portal administrator who can sign in; the password comes from the environment or stdin, never the arguments", async () => {
  const made = await createAdmin(["--email", "root@example.test", "--name", "Root", "--json"], { env: { BERTH_ADMIN_PASSWORD: "a long enough password" } });
  expect(made.code, made.stderr).toBe(0);
  expect(JSON.parse(made.stdout)).toMatchObject({ email: "root@example.test", is_portal_admin: true, created: true });
  const session = await login("root@example.test", "a long enough password");
  expect(session.status).toBe(200);
  expect((await platformClient(cp.app, session.body.token).get("/me")).body.user.is_portal_admin).toBe(true);

  const fromStdin = await createAdmin(["--email", "ops@example.test", "--name", "Ops"], { stdin: "typed at the prompt\n" });
  expect(fromStdin.code, fromStdin.stderr).toBe(0);
  expect((await login("ops@example.test", "typed at the prompt")).status).toBe(200);
}, 120_000);

it("refuses a short password, an address that has an account (unless --promote), and missing arguments", async () => {
  const short = await createAdmin(["--email", "short@example.test", "--name", "S"], { env: { BERTH_ADMIN_PASSWORD: "short" } });
  expect(short.code).toBe(2);
  expect(short.stderr).toContain("at least");

  const reg = await platformClient(cp.app, null).post("/auth/register", { email: "eve@example.test", name: "Eve", password: "correct horse battery staple", organization_name: "Eve" });
  expect(reg.status).toBe(201);
  expect((await platformClient(cp.app, reg.body.token).get("/me")).body.user.is_portal_admin).toBe(false);
  const taken = await createAdmin(["--email", "eve@example.test", "--name", "Eve"], { env: { BERTH_ADMIN_PASSWORD: "a long enough password" } });
  expect(taken.code).toBe(2);
  expect(taken.stderr).toContain("--promote");
  const promoted = await createAdmin(["--email", "eve@example.test", "--promote"]);
  expect(promoted.code, promoted.stderr).toBe(0);
  expect((await platformClient(cp.app, reg.body.token).get("/me")).body.user.is_portal_admin).toBe(true);

  const missing = await createAdmin(["--name", "Nobody"]);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("--email");
  // Four starts of the command through tsx, each compiling the control plane's sources: a few
  // seconds apiece, over 30 s together on a loaded 2-core machine.
}, 120_000);
