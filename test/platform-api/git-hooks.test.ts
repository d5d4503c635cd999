// The inbound git push hook (platform spec 4.1 rule 8, 4.2) over real HTTP: pushes signed
// with a project's hook secret start git_push deployments of the environments that follow
// the pushed branch (and of those whose addon repository was pushed); unsigned or wrongly
// signed pushes start nothing; a redelivered id never deploys twice.
import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { GIT_HOOK_ADDRESS_LIMIT } from "../../apps/control-plane/src/modules/git-hooks/git-hooks.routes.ts";
import { startControlPlane, startOfRateWindow, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  base = urlOf(cp);
});
afterAll(async () => cp?.close());

const REPO_HTTPS = "https://git.example.com/demo/erp-addons.git"; // the demo project's repository
const sign = (secret: string, body: string) => createHmac("sha256", secret).update(body).digest("hex");
const sha = () => createHmac("sha1", randomUUID()).digest("hex");

interface Setup {
  demo: DemoOrganization;
  secret: string;
}

/** A demo organisation whose production environment auto-deploys main, with a hook secret made through the API. */
async function project(): Promise<Setup> {
  const demo = await createDemoOrganization(cp.database.db, cp.app.services);
  await cp.database.pool.query("update environments set auto_deploy = true, git_branch = 'main' where id = $1", [demo.environments.running]);
  const admin = await addPerson(cp.app, "project_admin", { organizationId: demo.organization_id, projectId: demo.project_id });
  const res = await admin.api.post(`/projects/${demo.project_id}/git-hook-secret`);
  expect(res.status).toBe(201);
  return { demo, secret: res.body.secret };
}

function githubPush(opts: { branch?: string; repo?: { full_name: string; clone_url: string; ssh_url: string }; commit?: string; message?: string } = {}) {
  const commit = opts.commit ?? sha();
  return {
    ref: `refs/heads/${opts.branch ?? "main"}`,
    before: sha(),
    after: commit,
    repository: opts.repo ?? { full_name: "demo/erp-addons", clone_url: REPO_HTTPS, ssh_url: "git@git.example.com:demo/erp-addons.git" },
    head_commit: { id: commit, message: opts.message ?? "Fix invoice rounding\n\nLonger text" },
    commits: [{ id: commit, message: opts.message ?? "Fix invoice rounding\n\nLonger text" }],
  };
}

async function hook(host: string, payload: unknown, headers: Record<string, string>) {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  const res = await fetch(`${base}/api/v1/webhooks/${host}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

function github(secret: string | null, payload: object, opts: { event?: string; delivery?: string } = {}) {
  const body = JSON.stringify(payload);
  return hook("github", body, {
    "x-github-event": opts.event ?? "push",
    "x-github-delivery": opts.delivery ?? randomUUID(),
    ...(secret ? { "x-hub-signature-256": `sha256=${sign(secret, body)}` } : {}),
  });
}

async function deploymentsOf(environmentId: string) {
  const { rows } = await cp.database.pool.query(
    "select id, trigger, triggered_by, git_branch, git_commit, git_message, status, extra_data from deployments where environment_id = $1 order by created_at",
    [environmentId],
  );
  return rows;
}

describe("hook secret", () => {
  test("a project admin creates and rotates it (shown once); a member may not; an outsider sees no project", async () => {
    const demo = await createDemoOrganization(cp.database.db, cp.app.services);
    const where = { organizationId: demo.organization_id, projectId: demo.project_id };
    const member = await addPerson(cp.app, "project_member", where);
    expect((await member.api.post(`/projects/${demo.project_id}/git-hook-secret`)).status).toBe(403);
    const outsider = await addPerson(cp.app, "outsider", where);
    expect((await outsider.api.post(`/projects/${demo.project_id}/git-hook-secret`)).status).toBe(404);

    const admin = await addPerson(cp.app, "project_admin", where);
    const first = await admin.api.post(`/projects/${demo.project_id}/git-hook-secret`);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ project_id: demo.project_id, secret: expect.stringMatching(/^bgh_/) });
    expect(first.body.urls.github).toMatch(/\/api\/v1\/webhooks\/github$/);
    const { rows } = await cp.database.pool.query("select git_hook_secret_enc from projects where id = $1", [demo.project_id]);
    expect(rows[0].git_hook_secret_enc).not.toContain(first.body.secret); // sealed at rest

    const second = await admin.api.post(`/projects/${demo.project_id}/git-hook-secret`);
    expect(second.body.secret).not.toBe(first.body.secret);
    await cp.database.pool.query("update environments set auto_deploy = true, git_branch = 'main' where id = $1", [demo.environments.running]);
    expect((await github(first.body.secret, githubPush())).status).toBe(401); // the old secret no longer works
    expect((await github(second.body.secret, githubPush())).status).toBe(202);
  });

  test("no session is needed for the hook, but one is for everything else", async () => {
    expect((await fetch(`${base}/api/v1/projects/${randomUUID()}/git-hook-secret`, { method: "POST" })).status).toBe(401);
  });
});

describe("GitHub push", () => {
  let s: Setup;
  beforeAll(async () => {
    s = await project();
  });

  test("unsigned and wrongly signed pushes are refused with 401 and start nothing", async () => {
    const unsigned = await github(null, githubPush());
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toMatchObject({ error: "signature_missing", message: expect.any(String) });
    const wrong = await github("not-the-secret", githubPush());
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: "signature_invalid", message: expect.any(String) });
    // A signature over other bytes than those sent.
    const payload = githubPush();
    const tampered = await hook("github", JSON.stringify({ ...payload, ref: "refs/heads/other" }), {
      "x-github-event": "push",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${sign(s.secret, JSON.stringify(payload))}`,
    });
    expect(tampered.status).toBe(401);
    expect(await deploymentsOf(s.demo.environments.running)).toEqual([]);
  });

  test("a signed push deploys the auto-deploy environment on that branch with the pushed commit; a redelivery deploys nothing more", async () => {
    const commit = sha();
    const delivery = randomUUID();
    const res = await github(s.secret, githubPush({ commit, message: "Fix invoice rounding\n\nLonger text" }), { delivery });
    expect(res.status).toBe(202);
    expect(res.headers.get("x-ratelimit-limit")).toBe("30");
    expect(res.body).toMatchObject({ git_host: "github", event: "push", delivery_id: delivery, branch: "main", commit, ignored: null, skipped: [] });
    expect(res.body.deliveries).toEqual([{ project_id: s.demo.project_id, duplicate: false, received_at: expect.any(String) }]);
    expect(res.body.deployments).toHaveLength(1);
    expect(res.body.deployments[0]).toMatchObject({ project_id: s.demo.project_id, environment_id: s.demo.environments.running, reason: "branch", addon: null });

    const rows = await deploymentsOf(s.demo.environments.running);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: res.body.deployments[0].deployment_id,
      trigger: "git_push",
      triggered_by: null,
      git_branch: "main",
      git_commit: commit,
      git_message: "Fix invoice rounding\n\nLonger text",
    });
    // The staging environment follows another branch and does not auto-deploy.
    expect(await deploymentsOf(s.demo.environments.stopped)).toEqual([]);

    const again = await github(s.secret, githubPush({ commit }), { delivery });
    expect(again.status).toBe(200);
    expect(again.body.deliveries).toEqual([{ project_id: s.demo.project_id, duplicate: true, received_at: res.body.deliveries[0].received_at }]);
    expect(again.body.deployments.map((d: { deployment_id: string }) => d.deployment_id)).toEqual([rows[0].id]);
    expect(await deploymentsOf(s.demo.environments.running)).toHaveLength(1);
  });

  test("a push while the environment is busy is recorded as skipped, not failed", async () => {
    const res = await github(s.secret, githubPush());
    expect(res.status).toBe(202);
    expect(res.body.deployments).toEqual([]);
    expect(res.body.skipped).toEqual([
      { project_id: s.demo.project_id, environment_id: s.demo.environments.running, reason: "deployment_in_progress", message: expect.any(String) },
    ]);
    expect(await deploymentsOf(s.demo.environments.running)).toHaveLength(1);
  });

  test("other events, tags and other branches are verified and ignored", async () => {
    const before = (await deploymentsOf(s.demo.environments.running)).length;
    const ping = await github(s.secret, { zen: "hi", repository: githubPush().repository }, { event: "ping" });
    expect(ping.status).toBe(202);
    expect(ping.body.ignored).toMatch(/not a push/);
    const tag = await github(s.secret, { ...githubPush(), ref: "refs/tags/v1" });
    expect(tag.body.ignored).toMatch(/not to a branch/);
    const unsignedPing = await github(null, { zen: "hi", repository: githubPush().repository }, { event: "ping" });
    expect(unsignedPing.status).toBe(401);
    const other = await github(s.secret, githubPush({ branch: "feature/x" }));
    expect(other.body).toMatchObject({ deployments: [], skipped: [] });
    expect(await deploymentsOf(s.demo.environments.running)).toHaveLength(before);
  });
});

describe("several projects on one repository", () => {
  test("only the projects whose secret signed the push deploy", async () => {
    const a = await project();
    const b = await project();
    const res = await github(a.secret, githubPush());
    expect(res.status).toBe(202);
    expect(res.body.deployments.map((d: { project_id: string }) => d.project_id)).toEqual([a.demo.project_id]);
    expect(await deploymentsOf(b.demo.environments.running)).toEqual([]);
  });

  test("the same repository written as SSH or without .git matches", async () => {
    const s = await project();
    await cp.database.pool.query("update projects set git_repo_url = 'git@git.example.com:Demo/ERP-addons' where id = $1", [s.demo.project_id]);
    const res = await github(s.secret, githubPush());
    expect(res.body.deployments.map((d: { project_id: string }) => d.project_id)).toEqual([s.demo.project_id]);
  });
});

describe("GitLab and Gitea", () => {
  test("GitLab: X-Gitlab-Token carries the secret; a wrong token is refused; checkout_sha is deployed", async () => {
    const s = await project();
    const commit = sha();
    const payload = {
      object_kind: "push",
      ref: "refs/heads/main",
      before: sha(),
      after: commit,
      checkout_sha: commit,
      project: { path_with_namespace: "demo/erp-addons", git_http_url: REPO_HTTPS, git_ssh_url: "git@git.example.com:demo/erp-addons.git" },
      commits: [
        { id: sha(), message: "Earlier commit\n" },
        { id: commit, message: "Add payroll module\n" },
      ],
    };
    const headers = (token: string, delivery = randomUUID()) => ({ "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": delivery, "x-gitlab-token": token });
    expect((await hook("gitlab", payload, headers("wrong"))).status).toBe(401);
    expect((await hook("gitlab", payload, { "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": randomUUID() })).status).toBe(401);

    const delivery = randomUUID();
    const res = await hook("gitlab", payload, headers(s.secret, delivery));
    expect(res.status).toBe(202);
    expect(res.body.deployments).toHaveLength(1);
    expect((await deploymentsOf(s.demo.environments.running))[0]).toMatchObject({ trigger: "git_push", git_commit: commit, git_message: "Add payroll module", triggered_by: null });
    expect((await hook("gitlab", payload, headers(s.secret, delivery))).status).toBe(200);
    expect(await deploymentsOf(s.demo.environments.running)).toHaveLength(1);
  });

  test("GitLab: an HMAC in X-Gitlab-Signature is accepted too", async () => {
    const s = await project();
    const body = JSON.stringify({ ref: "refs/heads/main", after: sha(), project: { path_with_namespace: "demo/erp-addons", git_http_url: REPO_HTTPS }, commits: [] });
    const res = await hook("gitlab", body, { "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": randomUUID(), "x-gitlab-signature": `sha256=${sign(s.secret, body)}` });
    expect(res.status).toBe(202);
    expect(res.body.deployments).toHaveLength(1);
  });

  test("Gitea: X-Gitea-Signature is the hex HMAC of the raw body", async () => {
    const s = await project();
    const commit = sha();
    const body = JSON.stringify({
      ref: "refs/heads/main",
      after: commit,
      repository: { full_name: "demo/erp-addons", clone_url: REPO_HTTPS, ssh_url: "git@git.example.com:demo/erp-addons.git" },
      commits: [{ id: commit, message: "Gitea commit" }],
      head_commit: { id: commit, message: "Gitea commit" },
    });
    const headers = (sig: string, delivery = randomUUID()) => ({ "x-gitea-event": "push", "x-gitea-delivery": delivery, "x-gitea-signature": sig });
    expect((await hook("gitea", body, headers(sign("wrong", body)))).status).toBe(401);
    const delivery = randomUUID();
    const res = await hook("gitea", body, headers(sign(s.secret, body), delivery));
    expect(res.status).toBe(202);
    expect((await deploymentsOf(s.demo.environments.running))[0]).toMatchObject({ trigger: "git_push", git_commit: commit, git_message: "Gitea commit" });
    const again = await hook("gitea", body, headers(sign(s.secret, body), delivery));
    expect(again.status).toBe(200);
    expect(await deploymentsOf(s.demo.environments.running)).toHaveLength(1);
  });
});

describe("addon repositories (rule 8)", () => {
  test("a push to an active auto-deploy addon repository deploys the environments using it on that branch", async () => {
    const s = await project();
    const addonUrl = "git@git.example.com:acme/shared-addons.git";
    // Staging uses the addon on branch 17.0; production has it too, but switched off.
    await cp.database.pool.query(
      `insert into environment_addons (organization_id, environment_id, name, git_url, branch, auto_deploy, is_active) values
       ($1, $2, 'shared', $4, '17.0', true, true), ($1, $3, 'shared', $4, '17.0', true, false)`,
      [s.demo.organization_id, s.demo.environments.stopped, s.demo.environments.running, addonUrl],
    );
    const push = githubPush({
      branch: "17.0",
      repo: { full_name: "acme/shared-addons", clone_url: "https://git.example.com/acme/shared-addons.git", ssh_url: addonUrl },
    });
    expect((await github("wrong", push)).status).toBe(401);
    const res = await github(s.secret, push);
    expect(res.status).toBe(202);
    expect(res.body.deployments).toEqual([
      { project_id: s.demo.project_id, environment_id: s.demo.environments.stopped, deployment_id: expect.any(String), reason: "addon", addon: "shared" },
    ]);
    const [row] = await deploymentsOf(s.demo.environments.stopped);
    expect(row).toMatchObject({ trigger: "git_push", triggered_by: null, git_branch: "staging" });
    expect(row.extra_data.git_push).toMatchObject({ addon: "shared", branch: "17.0", commit: push.after });
    expect(await deploymentsOf(s.demo.environments.running)).toEqual([]);
    // Another branch of the addon repository deploys nothing.
    const other = await github(s.secret, { ...push, ref: "refs/heads/16.0" });
    expect(other.body.deployments).toEqual([]);
  });
});

describe("rate limit", () => {
  test("at most 30 deliveries per minute per project", async () => {
    const s = await project();
    const ping = { zen: "hi", repository: githubPush().repository };
    for (let i = 0; i < 30; i++) expect((await github(s.secret, ping, { event: "ping" })).status).toBe(202);
    const over = await github(s.secret, ping, { event: "ping" });
    expect(over.status).toBe(429);
    expect(over.body.error).toBe("rate_limit_exceeded");
    expect(over.headers.get("retry-after")).toMatch(/^\d+$/);
  });

  test("a request without a signature header is refused before its body is parsed", async () => {
    const junk = await hook("github", "{ not json", { "x-github-event": "push", "x-github-delivery": randomUUID() });
    expect(junk.status).toBe(401);
    expect(junk.body.error).toBe("signature_missing");
  });

  test(`one address may send at most ${GIT_HOOK_ADDRESS_LIMIT} hook requests a minute, counted before parsing`, async () => {
    // At a window's start: 601 requests on a loaded machine once crossed into the next window.
    startOfRateWindow(cp);
    const signedJunk = () => hook("github", "{ not json", { "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": "sha256=00" });
    for (let i = 0; i < GIT_HOOK_ADDRESS_LIMIT; i++) expect((await signedJunk()).status).toBe(400);
    const over = await signedJunk();
    expect(over.status).toBe(429);
    expect(over.body.error).toBe("rate_limit_exceeded");
    cp.clock.advance(61_000);
  });
});
