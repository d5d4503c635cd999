// Add-on repositories against a real private Git host (sshd on 127.0.0.1 with its own host
// key and an authorized_keys holding only the deploy key): cloned with the deploy key, refused
// without it (naming the repository), pinned commits, submodules with the same key, host
// keys pinned per repository, and addons_path built from nested module folders.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddonRepository } from "@berth/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandError } from "../runner/handler-types.ts";
import { addonReposDir, knownHostsDir, repositoryFolder, stageAddonRepositories } from "./addon-repositories.ts";
import { buildAddonsPath, discoverAddonFolders, requirementFiles, scanAddonFolders } from "./addons-path.ts";
import { startGitHttpsServer } from "./git-https-server.test-helpers.ts";
import { git, hostKeyOf, sshdMissing, sshKeyPair, startSshGitServer, type SshGitServer } from "./ssh-git-server.test-helpers.ts";

const missing = sshdMissing();
const manifest = (version: string) => `{'name': 'Test', 'version': '${version}', 'license': 'LGPL-3'}\n`;
const silent = () => undefined;
const options = { signal: new AbortController().signal, timeoutMs: 30_000, log: silent };

describe.skipIf(missing !== null)("add-on repositories over SSH with a deploy key", () => {
  const work = mkdtempSync(join(tmpdir(), "berth-addon-repos-"));
  const envDir = join(work, "env");
  let server: SshGitServer;
  let deployKey: { privateKey: string; publicKey: string };
  let otherKey: { privateKey: string; publicKey: string };
  let modulesRepo: Awaited<ReturnType<SshGitServer["repository"]>>;
  let first: string;
  let second: string;

  const repo = (over: Partial<AddonRepository> = {}): AddonRepository => ({
    id: randomUUID(),
    level: "organization",
    name: "shared-addons",
    url: modulesRepo.url,
    branch: "main",
    commit: null,
    submodules: false,
    paths: [],
    ssh_private_key: deployKey.privateKey,
    ...over,
  });

  const keyDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith("berth-key-"));

  beforeAll(async () => {
    await mkdir(envDir, { recursive: true });
    deployKey = await sshKeyPair(work, "deploy");
    otherKey = await sshKeyPair(work, "other");
    server = await startSshGitServer({ authorizedKeys: [deployKey.publicKey] });
    modulesRepo = await server.repository("modules");
    first = await modulesRepo.commit("first", {
      "sale_ext/__manifest__.py": manifest("1.0"),
      "nested/deeper/stock_ext/__manifest__.py": manifest("1.0"),
      "nested/deeper/stock_ext/models/__manifest__.py": "# not a module: inside one\n",
      "requirements.txt": "requests\n",
      "README.md": "docs\n",
    });
    second = await modulesRepo.commit("second", { "sale_ext/__manifest__.py": manifest("2.0") });
  }, 30_000);

  afterAll(async () => {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it("clones a private repository with the deploy key at the branch head, swaps it in and removes the key file", async () => {
    const before = keyDirs();
    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const r = repo();
    const [checkout] = await staging.clone([r], options);
    expect(checkout).toMatchObject({ id: r.id, commit: second, folder: repositoryFolder(r), hasRequirements: true });
    await staging.swapIn();
    const root = join(addonReposDir(envDir), checkout!.folder);
    expect(readFileSync(join(root, "sale_ext", "__manifest__.py"), "utf8")).toContain("2.0");
    expect(existsSync(staging.staging)).toBe(false);
    // The private key was on disk only while git ran.
    expect(keyDirs()).toEqual(before);
    // The server's host key is pinned for this repository.
    expect(readFileSync(join(knownHostsDir(envDir), `known_hosts-${r.id}`), "utf8")).toContain("ssh-ed25519");
  });

  it("checks out the pinned commit, not the branch head", async () => {
    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const [checkout] = await staging.clone([repo({ commit: first })], options);
    expect(checkout!.commit).toBe(first);
    expect(readFileSync(join(staging.staging, checkout!.folder, "sale_ext", "__manifest__.py"), "utf8")).toContain("1.0");
    await staging.discard();
  });

  it("is refused without the deploy key, or with another key, with an error naming the repository; the live add-ons stay", async () => {
    const live = readdirSync(addonReposDir(envDir));
    for (const attempt of [repo({ name: "no-key", ssh_private_key: undefined }), repo({ name: "wrong-key", ssh_private_key: otherKey.privateKey })]) {
      const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
      const error = await staging.clone([attempt], options).then(
        () => null,
        (e: unknown) => e,
      );
      await staging.discard();
      expect(error).toBeInstanceOf(CommandError);
      expect((error as CommandError).code).toBe("git_clone_failed");
      expect((error as Error).message).toContain(`add-on repository "${attempt.name}"`);
      expect((error as Error).message).toMatch(/Permission denied \(publickey\)|Could not read from remote repository/);
      expect((error as Error).message).not.toContain("PRIVATE KEY");
    }
    expect(readdirSync(addonReposDir(envDir))).toEqual(live);
  });

  it("refuses a host whose key changed since the repository's first clone", async () => {
    const r = repo({ name: "pinned" });
    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    await staging.clone([r], options);
    await staging.discard();
    // Another server (another host key): the repository's pinned entry is made to name its
    // address, as if the same host now answered with another key.
    const impostor = await startSshGitServer({ authorizedKeys: [deployKey.publicKey] });
    try {
      expect(await hostKeyOf(impostor)).not.toBe(await hostKeyOf(server));
      const copy = await impostor.repository("modules");
      await copy.commit("impostor", { "x/__manifest__.py": manifest("1.0") });
      const file = join(knownHostsDir(envDir), `known_hosts-${r.id}`);
      const pinned = readFileSync(file, "utf8");
      expect(pinned).toContain(`[127.0.0.1]:${server.port} `);
      await writeFile(file, pinned.replaceAll(`[127.0.0.1]:${server.port} `, `[127.0.0.1]:${impostor.port} `));
      const again = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
      const error = await again.clone([{ ...r, url: copy.url }], options).then(
        () => null,
        (e: unknown) => e as Error,
      );
      await again.discard();
      expect(error?.message).toContain('add-on repository "pinned"');
      expect(error?.message).toMatch(/Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
    } finally {
      await impostor.stop();
    }
  });

  it("names a sub-path that does not exist", async () => {
    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const error = await staging.clone([repo({ name: "sub", paths: ["missing/folder"] })], options).then(
      () => null,
      (e: unknown) => e as CommandError,
    );
    await staging.discard();
    expect(error?.code).toBe("addon_path_not_found");
    expect(error?.message).toContain('"missing/folder"');
  });

  it("checks out submodules with the same deploy key when asked, and not otherwise", async () => {
    const lib = await server.repository("lib");
    const libCommit = await lib.commit("lib", { "lib_module/__manifest__.py": manifest("1.0") });
    const parent = await server.repository("parent");
    await parent.commit("base", { "own_module/__manifest__.py": manifest("1.0") });
    // The submodule's URL is the ssh one: the clone needs the deploy key for it too.
    await git(["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", "-b", "main", lib.url.replace(/^ssh:\/\/[^/]+/, ""), "vendor/lib"], parent.work);
    await git(["config", "-f", ".gitmodules", "submodule.vendor/lib.url", lib.url], parent.work);
    const parentCommit = await parent.commit("with submodule", {});

    const without = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const [plain] = await without.clone([repo({ name: "parent", url: parent.url })], options);
    expect(existsSync(join(without.staging, plain!.folder, "vendor", "lib", "lib_module"))).toBe(false);
    await without.discard();

    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const [checkout] = await staging.clone([repo({ name: "parent", url: parent.url, submodules: true })], options);
    expect(checkout!.commit).toBe(parentCommit);
    const root = join(staging.staging, checkout!.folder);
    expect(existsSync(join(root, "vendor", "lib", "lib_module", "__manifest__.py"))).toBe(true);
    expect(await git(["rev-parse", "HEAD"], join(root, "vendor", "lib"))).toBe(libCommit);
    await staging.swapIn();
    const folders = await buildAddonsPath(join(envDir, "no-project"), addonReposDir(envDir), [checkout!]);
    expect(folders.map((f) => f.container)).toEqual([
      "/mnt/extra-addons",
      `/mnt/berth-addons/${checkout!.folder}`,
      `/mnt/berth-addons/${checkout!.folder}/vendor/lib`,
    ]);
  });

  it("builds addons_path from nested module folders: environment, then organisation, then platform", async () => {
    const single = await server.repository("single_mod");
    await single.commit("one module", { "__manifest__.py": manifest("1.0"), "models/x.py": "" });
    const repos = [
      repo({ name: "platform-tools", level: "platform", paths: ["nested"] }),
      repo({ name: "org-addons", level: "organization" }),
      repo({ name: "single_mod", level: "environment", url: single.url }),
    ];
    const projectDir = join(work, "project");
    await mkdir(join(projectDir, "custom", "my_mod"), { recursive: true });
    await writeFile(join(projectDir, "custom", "my_mod", "__manifest__.py"), manifest("1.0"));
    await writeFile(join(projectDir, "requirements.txt"), "lxml\n");

    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const checkouts = await staging.clone(repos, options);
    await staging.swapIn();
    const reposDir = addonReposDir(envDir);
    const byName = Object.fromEntries(checkouts.map((c) => [c.name, c.folder]));
    const folders = await buildAddonsPath(projectDir, reposDir, checkouts);
    expect(folders.map((f) => f.container)).toEqual([
      "/mnt/extra-addons",
      "/mnt/extra-addons/custom",
      // a repository that is one module: its parent folder, where the module is named after the repository
      `/mnt/berth-addons/${byName.single_mod!.replace(/\/single_mod$/, "")}`,
      `/mnt/berth-addons/${byName["org-addons"]}`,
      `/mnt/berth-addons/${byName["org-addons"]}/nested/deeper`,
      `/mnt/berth-addons/${byName["platform-tools"]}/nested/deeper`,
    ]);
    const modules = await scanAddonFolders(folders, "17.0");
    expect(modules.map((m) => m.name).sort()).toEqual(["my_mod", "sale_ext", "single_mod", "stock_ext"]);
    // The organisation's stock_ext wins over the platform's copy of the same module.
    expect(await requirementFiles(projectDir, checkouts)).toEqual([
      "/mnt/extra-addons/requirements.txt",
      `/mnt/berth-addons/${byName["org-addons"]}/requirements.txt`,
      `/mnt/berth-addons/${byName["platform-tools"]}/requirements.txt`,
    ]);
  });
});

describe("discovering add-on folders", () => {
  it("finds module folders at any depth up to the limit, skips hidden folders and the insides of modules", async () => {
    const root = mkdtempSync(join(tmpdir(), "berth-discover-"));
    try {
      const files = ["a/m1/__manifest__.py", "a/m2/__manifest__.py", "b/c/d/m3/__manifest__.py", ".git/m4/__manifest__.py", "a/m1/sub/m5/__manifest__.py", "e/f/g/h/i/m6/__manifest__.py"];
      for (const f of files) {
        await mkdir(join(root, f, ".."), { recursive: true });
        await writeFile(join(root, f), manifest("1.0"));
      }
      expect(await discoverAddonFolders(root)).toEqual([join(root, "a"), join(root, "b/c/d")]);
      expect(await discoverAddonFolders(join(root, "a", "m1"))).toEqual([join(root, "a")]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

/** git's smart HTTPS (git-https-server.test-helpers.ts) behind a check of the basic authorisation a token makes. */
async function startHttpGitServer(root: string, token: string) {
  const server = await startGitHttpsServer(root, { authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}` });
  return { url: (name: string) => server.url(`${name}.git`), seen: server.seen, close: server.close };
}

describe("add-on repositories over HTTP(S) with a token", () => {
  const TOKEN = "glpat-secret-token-never-logged";
  const work = mkdtempSync(join(tmpdir(), "berth-addon-http-"));
  const envDir = join(work, "env");
  let http: Awaited<ReturnType<typeof startHttpGitServer>>;
  let head: string;

  beforeAll(async () => {
    const root = join(work, "srv");
    await mkdir(root, { recursive: true });
    const bare = join(root, "private.git");
    const tree = join(work, "tree");
    await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
    await git(["init", "--quiet", "--initial-branch=main", tree]);
    await mkdir(join(tree, "web_ext"), { recursive: true });
    await writeFile(join(tree, "web_ext", "__manifest__.py"), manifest("1.0"));
    await git(["add", "--all"], tree);
    await git(["commit", "--quiet", "-m", "one"], tree);
    await git(["push", "--quiet", bare, "HEAD:main"], tree);
    head = await git(["rev-parse", "HEAD"], tree);
    http = await startHttpGitServer(root, TOKEN);
  });

  afterAll(async () => {
    await http?.close();
    await rm(work, { recursive: true, force: true });
  });

  const repo = (token: string | undefined): AddonRepository => ({
    id: randomUUID(),
    level: "environment",
    name: "private",
    url: http.url("private"),
    branch: "main",
    commit: null,
    submodules: false,
    paths: [],
    ...(token === undefined ? {} : { token }),
  });

  it("clones with the token as basic authorisation, and is refused without it or with another, never showing it", async () => {
    const staging = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
    const [checkout] = await staging.clone([repo(TOKEN)], options);
    expect(checkout!.commit).toBe(head);
    expect(existsSync(join(staging.staging, checkout!.folder, "web_ext", "__manifest__.py"))).toBe(true);
    // The token is in no URL git requested nor in the checkout's configuration.
    expect(http.seen.join("\n")).not.toContain(TOKEN);
    expect(readFileSync(join(staging.staging, checkout!.folder, ".git", "config"), "utf8")).not.toContain(TOKEN);
    await staging.discard();

    for (const token of [undefined, "wrong-token"]) {
      const again = await stageAddonRepositories(addonReposDir(envDir), knownHostsDir(envDir));
      const error = await again.clone([repo(token)], options).then(
        () => null,
        (e: unknown) => e as CommandError,
      );
      await again.discard();
      expect(error?.code).toBe("git_clone_failed");
      expect(error?.message).toContain('add-on repository "private"');
      expect(error?.message).not.toContain(TOKEN);
    }
  });
});
