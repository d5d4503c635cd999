// One rule for the Git URLs and branches Berth hands to an agent's git (lib/git-source.ts),
// on every surface that takes one: projects (public and platform API), migrations (create
// and configure), environments' and deploys' branches. file://, local paths, plain http,
// git://, ext:: and anything git reads as an option are refused with a stable code, and
// nothing is stored; credentials in a migration's URL are sealed as a project's are and are
// never shown to anyone, members included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { expectError, freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

const BAD_URLS = [
  "file:///etc/passwd",
  "/srv/git/erp.git",
  "../erp.git",
  "http://git.example.com/acme/erp.git",
  "git://git.example.com/acme/erp.git",
  "ext::sh -c touch% /tmp/pwned",
  "--upload-pack=touch /tmp/pwned",
  "ssh://-oProxyCommand=touch%20/tmp/pwned/x",
  "git@-oProxyCommand=x:acme/erp.git",
];
const BAD_BRANCHES = ["-x", "--upload-pack=touch /tmp/pwned", "a..b", "a b", "x.lock", "a~1"];

async function platform(role: "org_owner" | "org_member" = "org_owner") {
  const org = await freshOrganization(cp);
  const person = await addPerson(cp.app, role, { organizationId: org.d.organization_id, projectId: org.d.project_id });
  return { ...org, person };
}

describe("projects", () => {
  it.each(BAD_URLS)("refuse %j as git_repo_url on both APIs (400 git_url_invalid), storing nothing", async (url) => {
    const { d, rw, ro, person } = await platform();
    expectError(await rw.post("/projects", { name: "P", server_id: d.server_id, git_repo_url: url }), 400, "git_url_invalid");
    const before = (await ro.get(`/projects/${d.project_id}`)).body;
    expectError(await rw.patch(`/projects/${d.project_id}`, { git_repo_url: url }), 400, "git_url_invalid");
    expectError(await person.api.post(`/organizations/${d.organization_id}/projects`, { name: "P", server_id: d.server_id, git_repo_url: url }), 400, "git_url_invalid");
    expectError(await person.api.patch(`/projects/${d.project_id}`, { git_repo_url: url }), 400, "git_url_invalid");
    expect((await ro.get(`/projects/${d.project_id}`)).body).toEqual(before);
    const { rows } = await cp.database.pool.query("select 1 from projects where organization_id = $1 and git_repo_url = $2", [d.organization_id, url]);
    expect(rows).toEqual([]);
  });

  it.each(BAD_BRANCHES)("refuse %j as default_branch on both APIs (400 git_branch_invalid)", async (branch) => {
    const { d, rw, person } = await platform();
    expectError(await rw.post("/projects", { name: "P", server_id: d.server_id, default_branch: branch }), 400, "git_branch_invalid");
    expectError(await rw.patch(`/projects/${d.project_id}`, { default_branch: branch }), 400, "git_branch_invalid");
    expectError(await person.api.post(`/organizations/${d.organization_id}/projects`, { name: "P", server_id: d.server_id, default_branch: branch }), 400, "git_branch_invalid");
    expectError(await person.api.patch(`/projects/${d.project_id}`, { default_branch: branch }), 400, "git_branch_invalid");
  });

  it("take https and ssh URLs", async () => {
    const { d, rw } = await freshOrganization(cp);
    for (const url of ["https://git.example.com/acme/erp.git", "git@git.example.com:acme/erp.git", "ssh://git@git.example.com:2222/acme/erp.git"]) {
      const res = await rw.patch(`/projects/${d.project_id}`, { git_repo_url: url, default_branch: "release/17.0" });
      expect(res.status, url).toBe(200);
      expect(res.body.git_repo_url).toBe(url);
    }
  });
});

describe("environments and deploys", () => {
  it("refuse a branch git would read as an option", async () => {
    const { d, rw, person } = await platform();
    for (const branch of BAD_BRANCHES) {
      expectError(await rw.post("/environments", { project_id: d.project_id, name: "qa", git_branch: branch }), 400, "git_branch_invalid");
      expectError(await person.api.post(`/projects/${d.project_id}/environments`, { name: "qa", git_branch: branch }), 400, "git_branch_invalid");
      const res = await person.api.post(`/environments/${d.environments.running}/deploy`, { git_branch: branch });
      expectError(res, 400, "validation_error");
      const patched = await person.api.patch(`/projects/${d.project_id}/environments/${d.environments.running}`, { git_branch: branch });
      expectError(patched, 400, "validation_error");
    }
  });
});

describe("migrations", () => {
  const create = (person: Awaited<ReturnType<typeof platform>>["person"], orgId: string, more: Record<string, unknown>) =>
    person.api.post("/migrations", { organization_id: orgId, source_type: "vendor_paas", project_name: "Acme", data_processing_consent: true, ...more });

  it.each(BAD_URLS)("refuse %j as git_repo_url at create and configure (400 git_url_invalid)", async (url) => {
    const { d, person } = await platform();
    expectError(await create(person, d.organization_id, { git_repo_url: url }), 400, "git_url_invalid");
    const ok = await create(person, d.organization_id, {});
    expect(ok.status).toBe(201);
    // Configure takes an analysed migration: put this one there (the analysis is not what is tested).
    await cp.database.pool.query("update migrations set status = 'analyzed', erp_version_detected = '17.0' where id = $1", [ok.body.id]);
    expectError(await person.api.post(`/migrations/${ok.body.id}/configure`, { target_vm_id: d.server_id, git_repo_url: url }), 400, "git_url_invalid");
    expect((await person.api.get(`/migrations/${ok.body.id}`)).body).toMatchObject({ status: "analyzed", git_repo_url: null });
  });

  it.each(BAD_BRANCHES)("refuse %j as git_branch at create and configure (400 git_branch_invalid)", async (branch) => {
    const { d, person } = await platform();
    expectError(await create(person, d.organization_id, { git_repo_url: "https://git.example.com/a/b.git", git_branch: branch }), 400, "git_branch_invalid");
    const ok = await create(person, d.organization_id, {});
    await cp.database.pool.query("update migrations set status = 'analyzed', erp_version_detected = '17.0' where id = $1", [ok.body.id]);
    expectError(await person.api.post(`/migrations/${ok.body.id}/configure`, { target_vm_id: d.server_id, git_branch: branch }), 400, "git_branch_invalid");
  });

  it("keep URL credentials sealed: never stored in clear, never shown to the owner or a member", async () => {
    const { d, person } = await platform();
    const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
    const secret = "ghp_s3cr3tT0ken";
    const created = await create(person, d.organization_id, { git_repo_url: `https://deploy:${secret}@git.example.com/acme/erp.git`, git_branch: "main" });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body.git_repo_url).toBe("https://git.example.com/acme/erp.git");
    await cp.database.pool.query("update migrations set status = 'analyzed', erp_version_detected = '17.0' where id = $1", [id]);
    const configured = await person.api.post(`/migrations/${id}/configure`, { target_vm_id: d.server_id, git_repo_url: `https://x:${secret}2@git.example.com/acme/erp2.git` });
    expect(configured.status).toBe(200);
    for (const who of [person, member]) {
      const one = await who.api.get(`/migrations/${id}`);
      const list = await who.api.get(`/migrations?organization_id=${d.organization_id}`);
      expect(one.status).toBe(200);
      expect(list.status).toBe(200);
      expect(one.body.git_repo_url).toBe("https://git.example.com/acme/erp2.git");
      for (const body of [configured.body, one.body, list.body]) expect(JSON.stringify(body)).not.toContain(secret);
    }
    const { rows } = await cp.database.pool.query("select git_repo_url, git_repo_credentials_enc from migrations where id = $1", [id]);
    expect(rows[0].git_repo_url).toBe("https://git.example.com/acme/erp2.git");
    expect(rows[0].git_repo_credentials_enc).not.toContain(secret);
    expect(JSON.stringify(rows[0])).not.toContain(secret);
  });
});
