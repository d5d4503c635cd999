// apps/control-plane/docs/production.md, "From a checkout", followed to the letter: the commands
// of its first block run one by one in a fresh clone of this repository's HEAD (committed
// work only), against an empty database on the tests' PostgreSQL. The compiled control plane
// must then serve with the development dependencies gone: it migrates the database, answers
// /readyz, serves the dashboard, and an administrator made with `npm run admin:create` (the
// build's script too) signs in through the API.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REPO_ROOT } from "../../installers/build/build-agent.ts";
import { freePort } from "../setup/global-setup.ts";
import { waitUntil } from "../support/wait.ts";
import { appliedMigrations, emptyDatabase, get, newMasterKey, ok, operatorEnv, run, type EmptyDatabase } from "./support.ts";

const PRODUCTION_DOC = "apps/control-plane/docs/production.md";

/** The first ```sh block under "## From a checkout" in the production doc. */
function checkoutBlock(doc: string): string[] {
  const section = doc.split(/^## From a checkout$/m)[1]?.split(/^## /m)[0];
  if (section === undefined) throw new Error(`${PRODUCTION_DOC} has no '## From a checkout' section`);
  const block = section.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (block === undefined) throw new Error(`${PRODUCTION_DOC} has no sh block under '## From a checkout'`);
  return block.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
}

const commands = checkoutBlock(readFileSync(path.join(REPO_ROOT, PRODUCTION_DOC), "utf8"));

let tmp: string;
let clone: string;
let db: EmptyDatabase;
let env: NodeJS.ProcessEnv;
let server: ChildProcess | undefined;
let output = "";
let base: string;
const startedAt = Date.now();
const timings: string[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "berth-production-"));
  clone = path.join(tmp, "berth");
  db = await emptyDatabase();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = operatorEnv({
    DATABASE_URL: db.url,
    BERTH_MASTER_KEY: newMasterKey(),
    BERTH_HOST: "127.0.0.1",
    BERTH_PORT: String(port),
    BERTH_DATA_DIR: path.join(tmp, "data"),
    // From the npm cache when it has the packages (any developer's or CI's machine that ran
    // `npm ci` here); the registry otherwise. The commands themselves are the production doc's.
    npm_config_prefer_offline: "true",
    npm_config_audit: "false",
    npm_config_fund: "false",
    TURBO_TELEMETRY_DISABLED: "1",
  });

  // The block's shape: clone, then shell commands, the last one `npm start`.
  expect(commands[0]).toMatch(/^git clone \S+ berth && cd berth$/);
  expect(commands.at(-1)).toBe("npm start");
  await ok("git", ["clone", "--quiet", "--no-hardlinks", REPO_ROOT, clone], { timeout: 60_000 });
  for (const command of commands.slice(1, -1)) {
    const t = Date.now();
    await ok("sh", ["-c", command], { cwd: clone, env, timeout: 480_000 });
    timings.push(`${command}: ${Math.round((Date.now() - t) / 1000)} s`);
  }

  server = spawn("sh", ["-c", commands.at(-1)!], { cwd: clone, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  server.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  server.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  await waitUntil("the compiled control plane to answer /readyz", async () => (await get(base, "/readyz"))?.status === 200, {
    timeoutMs: 90_000,
    intervalMs: 250,
    detail: () => output.slice(-4000),
  });
  timings.push(`total to ready: ${Math.round((Date.now() - startedAt) / 1000)} s`);
  console.log(`production checkout: ${timings.join("; ")}`);
}, 1_200_000);

afterAll(async () => {
  if (server?.pid !== undefined && server.exitCode === null) {
    const exited = new Promise((r) => server!.once("exit", r));
    process.kill(-server.pid, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (server.exitCode === null) process.kill(-server.pid, "SIGKILL");
  }
  await db?.drop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
}, 60_000);

it("after `npm ci --omit=dev` only the runtime dependencies are installed, and the build is what runs", () => {
  for (const dev of ["typescript", "tsx", "turbo", "vitest", "eslint", "esbuild"]) {
    expect(existsSync(path.join(clone, "node_modules", dev)), `${dev} is a development dependency`).toBe(false);
  }
  expect(existsSync(path.join(clone, "node_modules/fastify/package.json"))).toBe(true);
  expect(existsSync(path.join(clone, "apps/control-plane/dist/server.js"))).toBe(true);
  expect(existsSync(path.join(clone, "packages/db/dist/index.js"))).toBe(true);
  // The process serving is node on the compiled server, not tsx on the sources.
  expect(output).toContain("node --conditions=berth-dist dist/server.js");
  expect(output).toContain(`control plane listening on ${base}`);
});

it("migrated the empty database on start and answers /readyz", async () => {
  const files = readdirSync(path.join(clone, "packages/db/migrations")).filter((f) => f.endsWith(".sql"));
  expect(await appliedMigrations(db.url)).toBe(files.length);
  const ready = await get(base, "/readyz");
  expect(ready?.status).toBe(200);
  expect(await ready?.json()).toEqual({ status: "ok", checks: { database: "ok", jobs: "ok" } });
});

it("serves the dashboard and its assets from the build", async () => {
  const page = await get(base, "/");
  expect(page?.status).toBe(200);
  expect(page?.headers.get("content-type")).toContain("text/html");
  expect(await page?.text()).toContain("/assets/boot.js");
  expect((await get(base, "/assets/boot.js"))?.status).toBe(200);
  const script = await get(base, "/assets/app.js");
  expect(script?.status).toBe(200);
  expect(await script?.text()).toBe(readFileSync(path.join(REPO_ROOT, "apps/control-plane/src/dashboard/public/app.js"), "utf8"));
  expect((await get(base, "/assets/uPlot.iife.min.js"))?.status).toBe(200);
  // api.js's client, from the production dependencies.
  const client = await get(base, "/assets/vendor/openapi-fetch.js");
  expect(client?.status).toBe(200);
  expect(client?.headers.get("content-type")).toContain("text/javascript");
  expect(await client?.text()).toContain("function createClient(");
});

it("serves the docs, rendered with the production dependencies (marked)", async () => {
  const index = await get(base, "/docs");
  expect(index?.status).toBe(200);
  expect(await index?.text()).toContain('<a href="/docs/production">');
  const doc = await get(base, "/docs/production");
  expect(doc?.status).toBe(200);
  expect(await doc?.text()).toContain('<h2 id="from-a-checkout">From a checkout</h2>');
});

it("`npm run admin:create` works without the development tools, and that administrator signs in through the API", async () => {
  const made = await run("npm", ["run", "-s", "admin:create", "--", "--email", "ops@example.test", "--name", "Ops", "--json"], {
    cwd: clone,
    env: { ...env, BERTH_ADMIN_PASSWORD: "a long enough password" },
    timeout: 60_000,
  });
  expect(made.code, made.stderr).toBe(0);
  expect(JSON.parse(made.stdout)).toMatchObject({ email: "ops@example.test", is_portal_admin: true, created: true });

  const login = await fetch(`${base}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "ops@example.test", password: "a long enough password" }),
  });
  expect(login.status).toBe(200);
  const { token } = (await login.json()) as { token: string };
  const me = await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  expect(me.status).toBe(200);
  expect(((await me.json()) as { user: { email: string; is_portal_admin: boolean } }).user).toMatchObject({ email: "ops@example.test", is_portal_admin: true });
});
