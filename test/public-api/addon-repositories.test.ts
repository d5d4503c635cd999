// Add-on repositories (issue 15): created, listed, read, changed and removed at the platform,
// organisation and environment levels in both APIs; bad input refused with stable codes; a
// deploy key generated (its OpenSSH public key shown, ssh-keygen reads the private key the
// command carries), tokens and private keys sealed and never returned; the signed deploy
// command carries the repositories of the three levels, and a retry sends the commits the
// deployment it repeats recorded.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordAddonCommits } from "../../apps/control-plane/src/modules/addon-repositories/addon-repositories.repo.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { logLines } from "../support/log-lines.ts";
import { addPerson } from "../support/people.ts";
import { publicClient } from "../support/http.ts";
import { freshOrganization } from "./fixtures.ts";
import { openedCommand } from "../support/stored-commands.ts";

let cp: TestControlPlane;
const log = logLines();
beforeAll(async () => {
  cp = await startControlPlane({ logger: { level: "debug", stream: log.stream } });
});
afterAll(async () => cp?.close());

const TOKEN = "ghp_tokenThatMustNeverLeak0123456789";
const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

async function commandAddons(deploymentId: string): Promise<Record<string, unknown>[] | undefined> {
  const [row] = await q("select sealed, signed from agent_commands where deployment_id = $1", [deploymentId]);
  expect(row, "a command was issued").toBeDefined();
  return openedCommand(row).params.addon_repositories as Record<string, unknown>[] | undefined;
}

describe("the public API", () => {
  it("creates an organisation repository with a deploy key: the public key is shown, the private key is sealed and never returned", async () => {
    const { rw, ro } = await freshOrganization(cp);
    const res = await rw.post("/addon-repositories", { git_url: "git@github.com:acme/odoo-addons.git", branch: "17.0", access: "deploy_key", sub_paths: ["addons/", "more"], submodules: true });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      level: "organization",
      environment_id: null,
      name: "odoo-addons",
      git_url: "git@github.com:acme/odoo-addons.git",
      branch: "17.0",
      commit: null,
      submodules: true,
      sub_paths: ["addons", "more"],
      access: "deploy_key",
      has_token: false,
      deploy_key: { public_key: expect.stringMatching(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA[A-Za-z0-9+/]+ berth-organization-odoo-addons$/), fingerprint: expect.stringMatching(/^SHA256:/) },
    });
    const [row] = await q("select secret_enc, deploy_key_public from environment_addons where id = $1", [res.body.id]);
    expect(row.secret_enc).not.toContain("PRIVATE KEY");
    expect(row.deploy_key_public).toBe(res.body.deploy_key.public_key);
    // Read back with a read-only key: the same view, no secret.
    const got = await ro.get(`/addon-repositories/${res.body.id}`);
    expect(got.body).toEqual(res.body);
    expect(JSON.stringify((await ro.get("/addon-repositories")).body)).not.toContain("PRIVATE");
    expect((await ro.get("/addon-repositories")).body.total).toBe(1);
    expect((await ro.post("/addon-repositories", { git_url: "https://example.com/a.git", branch: "main" })).body.error).toBe("read_only_key");

    // A new key on request; the old public key is gone.
    const again = await rw.patch(`/addon-repositories/${res.body.id}`, { regenerate_deploy_key: true });
    expect(again.status).toBe(200);
    expect(again.body.deploy_key.public_key).not.toBe(res.body.deploy_key.public_key);

    expect((await rw.delete(`/addon-repositories/${res.body.id}`)).status).toBe(204);
    expect((await rw.get(`/addon-repositories/${res.body.id}`)).status).toBe(404);
    expect(await q("select 1 from environment_addons where id = $1", [res.body.id])).toEqual([]);
  });

  it("keeps a token sealed, never returns it, and refuses bad input with stable codes", async () => {
    const { d, rw } = await freshOrganization(cp);
    const base = `/environments/${d.environments.running}/addon-repositories`;
    const res = await rw.post(base, { git_url: "https://gitlab.example.com/acme/private.git", branch: "main", token: TOKEN, commit: "a".repeat(40) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ level: "environment", environment_id: d.environments.running, access: "token", has_token: true, deploy_key: null, commit: "a".repeat(40) });
    expect(JSON.stringify(res.body)).not.toContain(TOKEN);
    expect(JSON.stringify((await rw.get(base)).body)).not.toContain(TOKEN);
    const [row] = await q("select secret_enc from environment_addons where id = $1", [res.body.id]);
    expect(row.secret_enc).not.toContain(TOKEN);

    const bad: [Record<string, unknown>, string][] = [
      [{ git_url: "file:///etc/passwd", branch: "main" }, "addon_url_invalid"],
      [{ git_url: "ext::sh -c touch% /tmp/x", branch: "main" }, "addon_url_invalid"],
      [{ git_url: "https://user:pass@github.com/a/b.git", branch: "main" }, "addon_url_invalid"],
      [{ git_url: "/srv/git/addons", branch: "main" }, "addon_url_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "-bad" }, "addon_branch_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "a..b" }, "addon_branch_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", commit: "HEAD~1" }, "addon_commit_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", sub_paths: ["../outside"] }, "addon_path_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", sub_paths: ["/abs"] }, "addon_path_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", name: "has space" }, "addon_name_invalid"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", access: "deploy_key" }, "addon_access_mismatch"],
      [{ git_url: "git@github.com:a/b.git", branch: "main", token: "x" }, "addon_access_mismatch"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", access: "token" }, "addon_token_required"],
      [{ git_url: "https://github.com/a/b.git", branch: "main", other: 1 }, "validation_error"],
      [{ branch: "main" }, "validation_error"],
    ];
    for (const [body, code] of bad) {
      const r = await rw.post(base, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error, JSON.stringify(body)).toBe(code);
    }
    // Switching to public forgets the token.
    const pub = await rw.patch(`${base}/${res.body.id}`, { access: "public" });
    expect(pub.body).toMatchObject({ access: "public", has_token: false });
    const [after] = await q("select secret_enc from environment_addons where id = $1", [res.body.id]);
    expect(after.secret_enc).toBeNull();
    expect(log.lines.join("\n")).not.toContain(TOKEN);
  });

  it("keeps organisations apart, and organisation writes need an organisation-wide key", async () => {
    const a = await freshOrganization(cp);
    const b = await freshOrganization(cp);
    const created = await a.rw.post("/addon-repositories", { git_url: "https://github.com/acme/a.git", branch: "main" });
    expect(created.status).toBe(201);
    expect((await b.rw.get(`/addon-repositories/${created.body.id}`)).status).toBe(404);
    expect((await b.rw.patch(`/addon-repositories/${created.body.id}`, { branch: "x" })).status).toBe(404);
    expect((await b.rw.delete(`/addon-repositories/${created.body.id}`)).status).toBe(404);
    expect((await b.rw.get(`/environments/${a.d.environments.running}/addon-repositories`)).status).toBe(404);
    const projectKey = publicClient(cp.app, a.d.api_keys.project_rw);
    expect((await projectKey.get("/addon-repositories")).status).toBe(200);
    const refused = await projectKey.post("/addon-repositories", { git_url: "https://github.com/acme/b.git", branch: "main" });
    expect(refused.status).toBe(403);
  });
});

describe("the platform API", () => {
  it("platform repositories are for portal administrators only; organisation ones for organisation admins; environment ones for project admins", async () => {
    const { d } = await freshOrganization(cp);
    const portal = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id });
    const orgAdmin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
    const projectAdmin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });

    const platform = await portal.api.post("/platform/addon-repositories", { git_url: "ssh://git@git.example.com:2222/berth/platform-tools.git", branch: "main", access: "deploy_key" });
    expect(platform.status, JSON.stringify(platform.body)).toBe(201);
    expect(platform.body).toMatchObject({ level: "platform", organization_id: null, environment_id: null, access: "deploy_key" });
    for (const who of [orgAdmin, projectAdmin, member]) {
      expect((await who.api.get("/platform/addon-repositories")).status).toBe(403);
      expect((await who.api.post("/platform/addon-repositories", { git_url: "https://x.example/a.git", branch: "main" })).status).toBe(403);
    }
    expect((await portal.api.delete(`/platform/addon-repositories/${platform.body.id}`)).status).toBe(204);

    const orgBase = `/organizations/${d.organization_id}/addon-repositories`;
    const org = await orgAdmin.api.post(orgBase, { git_url: "https://github.com/acme/shared.git", branch: "main" });
    expect(org.status, JSON.stringify(org.body)).toBe(201);
    expect((await member.api.get(orgBase)).body.total).toBe(1);
    expect((await projectAdmin.api.post(orgBase, { git_url: "https://github.com/acme/x.git", branch: "main" })).status).toBe(403);
    expect((await orgAdmin.api.patch(`${orgBase}/${org.body.id}`, { branch: "17.0", submodules: true })).body).toMatchObject({ branch: "17.0", submodules: true });

    const envBase = `/projects/${d.project_id}/environments/${d.environments.running}/addon-repositories`;
    const env = await projectAdmin.api.post(envBase, { git_url: "git@github.com:acme/env-only.git", branch: "main", access: "deploy_key" });
    expect(env.status, JSON.stringify(env.body)).toBe(201);
    expect(env.body.deploy_key.public_key).toMatch(/^ssh-ed25519 /);
    expect((await member.api.get(envBase)).status).toBe(403);
    const outsider = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    expect((await outsider.api.get(envBase)).status).toBe(404);
  });
});

describe("deploys", () => {
  it("carry the three levels' repositories (environment first) with the deploy key and token opened; a retry sends the recorded commits", async () => {
    const { d, rw } = await freshOrganization(cp);
    const portal = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id });
    const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const envId = d.environments.running;
    const platform = await portal.api.post("/platform/addon-repositories", { git_url: "https://git.example.com/berth/tools.git", branch: "main" });
    const org = await rw.post("/addon-repositories", { git_url: "git@github.com:acme/shared.git", branch: "17.0", access: "deploy_key", sub_paths: ["addons"] });
    const env = await rw.post(`/environments/${envId}/addon-repositories`, { git_url: "https://github.com/acme/env.git", branch: "main", token: TOKEN, submodules: true });
    try {
      const deploy = await admin.api.post("/deployments", { project_id: d.project_id, environment_id: envId, git_branch: "main" });
      expect(deploy.status, JSON.stringify(deploy.body)).toBe(201);
      const sent = (await commandAddons(deploy.body.id))!;
      expect(sent.map((r) => [r.level, r.name])).toEqual([
        ["environment", "env"],
        ["organization", "shared"],
        ["platform", "tools"],
      ]);
      expect(sent[0]).toMatchObject({ id: env.body.id, url: "https://github.com/acme/env.git", branch: "main", commit: null, submodules: true, paths: [], token: TOKEN });
      expect(sent[1]).toMatchObject({ id: org.body.id, paths: ["addons"], ssh_private_key: expect.stringContaining("BEGIN OPENSSH PRIVATE KEY") });
      expect(sent[2]).not.toHaveProperty("token");
      expect(sent[2]).not.toHaveProperty("ssh_private_key");
      // The key the command carries is the one whose public half the API showed.
      const dir = mkdtempSync(join(tmpdir(), "berth-cp-key-"));
      try {
        writeFileSync(join(dir, "id"), sent[1]!.ssh_private_key as string, { mode: 0o600 });
        expect(execFileSync("ssh-keygen", ["-y", "-f", join(dir, "id")], { encoding: "utf8" }).trim().split(" ").slice(0, 2)).toEqual(org.body.deploy_key.public_key.split(" ").slice(0, 2));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      // The deployment records the repositories, without secrets.
      const view = await admin.api.get(`/deployments/${deploy.body.id}`);
      expect(view.body.extra_data.addons.map((a: { name: string; branch: string }) => [a.name, a.branch])).toEqual([
        ["env", "main"],
        ["shared", "17.0"],
        ["tools", "main"],
      ]);
      expect(JSON.stringify(view.body)).not.toContain(TOKEN);
      expect(JSON.stringify(view.body)).not.toContain("PRIVATE KEY");

      // The agent reported the commits it checked out; the deployment failed later on. The
      // branches move on, and a retry checks out exactly those commits again.
      const commits = [
        { id: env.body.id, commit: "1".repeat(40) },
        { id: org.body.id, commit: "2".repeat(40) },
        { id: platform.body.id, commit: "3".repeat(40) },
      ];
      await recordAddonCommits(cp.database.pool, deploy.body.id, commits);
      await q("update deployments set status = 'failed', started_at = now(), completed_at = now() where id = $1", [deploy.body.id]);
      const retry = await admin.api.post(`/deployments/${deploy.body.id}/retry`);
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
      const resent = (await commandAddons(retry.body.id))!;
      expect(resent.map((r) => r.commit)).toEqual(commits.map((c) => c.commit));
      expect(resent[0]!.token).toBe(TOKEN);
      await q("update deployments set status = 'success', started_at = now(), completed_at = now() where id = $1", [retry.body.id]);

      // Without repositories, no field at all: an older agent keeps deploying.
      for (const [client, path] of [
        [rw, `/environments/${envId}/addon-repositories/${env.body.id}`],
        [rw, `/addon-repositories/${org.body.id}`],
        [portal.api, `/platform/addon-repositories/${platform.body.id}`],
      ] as const) {
        expect((await client.delete(path)).status).toBe(204);
      }
      const plain = await admin.api.post("/deployments", { project_id: d.project_id, environment_id: envId, git_branch: "main" });
      expect(plain.status, JSON.stringify(plain.body)).toBe(201);
      expect(await commandAddons(plain.body.id)).toBeUndefined();
    } finally {
      // Platform repositories reach every environment of the installation: never leave one behind.
      if (platform.body?.id) await q("delete from environment_addons where id = $1", [platform.body.id]);
    }
  });
});
