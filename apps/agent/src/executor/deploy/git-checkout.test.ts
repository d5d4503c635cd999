// The agent's git, with the real git and real repositories on disk: it clones over https
// (and ssh, see addon-repositories.test.ts) only, whatever the control plane sends. A
// file:// URL, a local path, plain http and an option as URL or branch are refused, and so is
// a submodule that points at file://, a local path or plain http, even when git would fetch
// it by default.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutRepository } from "./git-checkout.ts";
import { startGitHttpsServer, type GitHttpsServer } from "./git-https-server.test-helpers.ts";

const execFileAsync = promisify(execFile);
const GIT_ENV = { GIT_AUTHOR_NAME: "T", GIT_AUTHOR_EMAIL: "t@berth.invalid", GIT_COMMITTER_NAME: "T", GIT_COMMITTER_EMAIL: "t@berth.invalid" };
/** The test's own git (never the agent's): it may use local paths to build the repositories. */
const git = async (args: string[], cwd?: string) =>
  (await execFileAsync("git", ["-c", "protocol.file.allow=always", ...args], { ...(cwd ? { cwd } : {}), env: { ...process.env, ...GIT_ENV } })).stdout.trim();

const work = mkdtempSync(join(tmpdir(), "berth-git-checkout-"));
const root = join(work, "srv");
let https: GitHttpsServer;
let http: GitHttpsServer;
const options = () => ({ signal: AbortSignal.timeout(60_000), timeoutMs: 60_000 });
const target = (name: string) => join(work, "checkouts", name);

/** A bare repository under root with one commit holding `files`; its path. */
async function bareRepo(name: string, files: Record<string, string>, build?: (tree: string) => Promise<void>): Promise<string> {
  const bare = join(root, `${name}.git`);
  const tree = join(work, `tree-${name}`);
  await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
  await git(["init", "--quiet", "--initial-branch=main", tree]);
  for (const [file, content] of Object.entries(files)) await writeFile(join(tree, file), content);
  await build?.(tree);
  await git(["add", "--all"], tree);
  await git(["commit", "--quiet", "-m", name], tree);
  await git(["push", "--quiet", bare, "HEAD:main"], tree);
  return bare;
}

/** A repository over https whose submodule `lib` is fetched from `url`. */
async function withSubmodule(name: string, libBare: string, url: string): Promise<string> {
  return bareRepo(name, { "README.md": name }, async (tree) => {
    await git(["submodule", "add", "--quiet", "-b", "main", libBare, "lib"], tree);
    await git(["config", "-f", ".gitmodules", "submodule.lib.url", url], tree);
  });
}

let lib: string;
beforeAll(async () => {
  await mkdir(join(work, "checkouts"), { recursive: true });
  await mkdir(root, { recursive: true });
  https = await startGitHttpsServer(root);
  http = await startGitHttpsServer(root, { plain: true });
  lib = await bareRepo("lib", { "SECRET.txt": "from the agent's disk\n" });
  await bareRepo("app", { "VERSION": "1\n" });
});
afterAll(async () => {
  await https?.close();
  await http?.close();
  await rm(work, { recursive: true, force: true });
});

describe("the agent's git", () => {
  it("clones an https repository, with a submodule over https", async () => {
    await withSubmodule("good", lib, https.url("lib.git"));
    const out = await checkoutRepository({ url: https.url("good.git"), branch: "main", commit: null }, target("good"), { ...options(), submodules: true });
    expect(out.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(existsSync(join(target("good"), "lib", "SECRET.txt"))).toBe(true);
  });

  it.each([
    ["a file:// URL", () => `file://${join(root, "app.git")}`],
    ["a local path", () => join(root, "app.git")],
    ["plain http", () => http.url("app.git")],
    ["an option", () => "--upload-pack=touch /tmp/berth-pwned"],
    ["ext::", () => "ext::sh -c touch% /tmp/berth-pwned"],
  ])("refuses %s as the repository, cloning nothing", async (_what, url) => {
    const error = await checkoutRepository({ url: url(), branch: "main", commit: null }, target("refused"), options()).then(
      () => null,
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("only https and ssh") });
    expect(existsSync(target("refused"))).toBe(false);
  });

  it.each(["-x", "--upload-pack=touch /tmp/berth-pwned"])("refuses the branch %j", async (branch) => {
    const error = await checkoutRepository({ url: https.url("app.git"), branch, commit: null }, target("refused-branch"), options()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_params" });
    expect(existsSync(target("refused-branch"))).toBe(false);
  });

  it.each([
    ["file://", () => `file://${lib}`],
    ["a local path", () => lib],
    ["plain http", () => http.url("lib.git")],
  ])("refuses a submodule fetched from %s: the checkout fails and reads nothing from there", async (what, url) => {
    const name = `sub-${what.replace(/[^a-z]/g, "")}`;
    await withSubmodule(name, lib, url());
    const error = await checkoutRepository({ url: https.url(`${name}.git`), branch: "main", commit: null }, target(name), { ...options(), submodules: true }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "git_submodules_failed" });
    expect(existsSync(join(target(name), "lib", "SECRET.txt"))).toBe(false);
    expect(existsSync(target(name))).toBe(false);
  });
});
