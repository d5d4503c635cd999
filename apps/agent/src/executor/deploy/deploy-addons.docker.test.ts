// A deploy with add-on repositories, with the real Docker engine, the stand-in ERP and a
// private Git host (sshd with a deploy key): the organisation's repository is cloned over
// SSH, its nested module folder reaches odoo.conf's addons_path, a listed module of it is
// installed, the deploy reports the commit it checked out, and a deploy given that commit
// (a retry, a rollback) checks out exactly it although the branch moved on.
// Needs `bash .ci/docker-setup.sh` first, root and openssh-server.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddonRepository } from "@berth/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExecutorHarness, deployParams, finishSuite, requireTestImages, type Run } from "../executor.test-helpers.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf } from "../environment/erp-container.ts";
import { addonReposDir } from "./addon-repositories.ts";
import { sshdMissing, sshKeyPair, startSshGitServer, type SshGitServer } from "./ssh-git-server.test-helpers.ts";

const SUITE = "executor-addons";
const manifest = (version: string) => `{'name': 'Add-on', 'version': '${version}', 'license': 'LGPL-3'}\n`;

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

describe.skipIf(sshdMissing() !== null)("deploying add-on repositories", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 8_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const layout = environmentLayout(h.stateDir, env);
  const keys = mkdtempSync(join(tmpdir(), "berth-exec-addons-"));
  let server: SshGitServer;
  let repo: Awaited<ReturnType<SshGitServer["repository"]>>;
  let addon: AddonRepository;

  const modules = async () => {
    const c = await h.docker.inspectContainer(layout.erpContainer);
    if (c === null) throw new Error("no ERP container");
    const response = await fetch(`http://127.0.0.1:${String(await hostPortOf(h.docker, c.id))}/berth/modules`, { signal: AbortSignal.timeout(10_000) });
    return (await response.json()) as { name: string; state: string; latest_version: string | null }[];
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    const key = await sshKeyPair(keys, "deploy");
    server = await startSshGitServer({ authorizedKeys: [key.publicKey] });
    repo = await server.repository("org-addons");
    addon = {
      id: randomUUID(),
      level: "organization",
      name: "org-addons",
      url: repo.url,
      branch: "main",
      commit: null,
      submodules: false,
      paths: [],
      ssh_private_key: key.privateKey,
    };
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await finishSuite(SUITE, h, keys);
  }, 180_000);

  it("clones the repository over SSH, puts its nested module folder on addons_path and installs a listed module", async () => {
    const v1 = await repo.commit("v1", { "erp/addons/berth_org_mod/__manifest__.py": manifest("1.0") });
    const run = await h.run("deploy", deployParams(env, { addon_repositories: [addon], modules: { upgrade: ["berth_org_mod"] } }));
    const result = resultOf(run);
    expect(result.addon_repositories).toEqual([{ id: addon.id, level: "organization", name: "org-addons", branch: "main", commit: v1 }]);
    const conf = readFileSync(layout.configFile, "utf8");
    expect(conf).toMatch(new RegExp(`^addons_path = /mnt/extra-addons,/mnt/berth-addons/organization-${addon.id.slice(0, 8)}/org-addons/erp/addons$`, "m"));
    expect((await modules()).find((m) => m.name === "berth_org_mod")).toMatchObject({ state: "installed", latest_version: "17.0.1.0" });
    const step = run.logs.filter((l) => l.step === "cloning_org_repos").map((l) => l.message);
    expect(step.some((m) => m.includes(`Checked out org-addons at ${v1}`))).toBe(true);
    // The deploy key never reaches the step log.
    expect(run.logs.some((l) => l.message.includes("PRIVATE KEY"))).toBe(false);
  }, 240_000);

  it("checks out the recorded commit again although the branch moved on (retry, rollback)", async () => {
    const first = resultOf(await h.run("deploy", deployParams(env, { addon_repositories: [addon] }))).addon_repositories as { commit: string }[];
    const v1 = first[0]!.commit;
    const v2 = await repo.commit("v2", { "erp/addons/berth_org_mod/__manifest__.py": manifest("2.0") });
    const pinned = resultOf(await h.run("deploy", deployParams(env, { addon_repositories: [{ ...addon, commit: v1 }] })));
    expect((pinned.addon_repositories as { commit: string }[])[0]!.commit).toBe(v1);
    const file = join(addonReposDir(layout.dir), `organization-${addon.id.slice(0, 8)}`, "org-addons", "erp/addons/berth_org_mod/__manifest__.py");
    expect(readFileSync(file, "utf8")).toContain("'1.0'");
    // Without a commit the branch head is taken, and the module is upgraded to it.
    const head = resultOf(await h.run("deploy", deployParams(env, { addon_repositories: [addon] })));
    expect((head.addon_repositories as { commit: string }[])[0]!.commit).toBe(v2);
    expect((await modules()).find((m) => m.name === "berth_org_mod")).toMatchObject({ state: "installed", latest_version: "17.0.2.0" });
  }, 360_000);

  it("fails the deploy naming the repository when the key is refused, and the ERP keeps serving the add-ons it had", async () => {
    await server.authorize([]);
    const run = await h.run("deploy", deployParams(env, { addon_repositories: [addon] }));
    expect(run.outcome.ok).toBe(false);
    if (!run.outcome.ok) {
      expect(run.outcome.error.code).toBe("git_clone_failed");
      expect(run.outcome.error.message).toContain('add-on repository "org-addons"');
      expect(run.outcome.error.message).toContain("Permission denied (publickey)");
    }
    expect((await modules()).find((m) => m.name === "berth_org_mod")?.state).toBe("installed");
  }, 240_000);
});
