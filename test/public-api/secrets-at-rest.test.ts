// Secrets at rest and in responses (finding 9): credentials written into a project's
// repository URL and webhook signing secrets are stored sealed with the master key, never
// shown after creation (not to read-only keys, not in idempotent replays, not in the support
// console's command views), and still reach whoever needs them: the deploy command the
// agent gets, and the signature of a webhook delivery. Rows written in clear before
// migration 0011 are sealed by the control plane.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { freshOrganization } from "./fixtures.ts";
import { openedCommand } from "../support/stored-commands.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

const TOKEN = "ghp_S3cr3tT0kenThatMustNotLeak";
const CREDENTIALED = `https://deploy-bot:${TOKEN}@git.example.com/acme/erp-addons.git`;
const BARE = "https://git.example.com/acme/erp-addons.git";

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
/** Every column of the row, as text. */
const rowText = async (table: string, id: string) => JSON.stringify((await q(`select t.* from ${table} t where id = $1`, [id]))[0]);

/** The signed parameters of the command that carries an operation. */
async function commandParams(deploymentId: string): Promise<{ command_id: string; params: { git: { url: string } | null } }> {
  const [row] = await q("select command_id, sealed, signed from agent_commands where deployment_id = $1", [deploymentId]);
  expect(row, "a command was issued").toBeDefined();
  return { command_id: row.command_id, params: openedCommand(row).params as { git: { url: string } | null } };
}

describe("a repository URL with credentials", () => {
  it("is stored without the token in clear, shown without credentials, and deploys with them", async () => {
    const { d, rw, ro } = await freshOrganization(cp);
    const created = await rw.post("/projects", { name: "Private repo", server_id: d.server_id, git_repo_url: CREDENTIALED });
    expect(created.status).toBe(201);
    expect(created.body.git_repo_url).toBe(BARE);
    const id = created.body.id as string;

    // At rest: the URL column is the bare URL; the userinfo is sealed, the token nowhere in clear.
    const [row] = await q("select git_repo_url, git_repo_credentials_enc from projects where id = $1", [id]);
    expect(row.git_repo_url).toBe(BARE);
    expect(row.git_repo_credentials_enc).toEqual(expect.any(String));
    expect(await rowText("projects", id)).not.toContain(TOKEN);
    expect(await rowText("projects", id)).not.toContain("deploy-bot");

    // A read-only key sees the URL without credentials.
    const got = await ro.get(`/projects/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.git_repo_url).toBe(BARE);
    expect(JSON.stringify((await ro.get("/projects?limit=100")).body)).not.toContain(TOKEN);

    // The deploy command the agent gets clones with the credentials.
    const env = await rw.post("/environments", { project_id: id, name: "production" });
    expect(env.status, JSON.stringify(env.body)).toBe(201);
    const deploy = await rw.post(`/environments/${env.body.id}/deploy`);
    expect(deploy.status, JSON.stringify(deploy.body)).toBe(202);
    const { command_id, params } = await commandParams(deploy.body.task_id);
    expect(params.git?.url).toBe(CREDENTIALED);

    // The support console shows the command without them.
    const staff = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const view = await staff.api.get(`/support/commands/${command_id}`);
    expect(view.status, JSON.stringify(view.body)).toBe(200);
    expect(view.body.params.git.url).toBe(BARE);
    expect(JSON.stringify(view.body)).not.toContain(TOKEN);
    const server = await staff.api.get(`/support/servers/${d.server_id}`);
    expect(server.status).toBe(200);
    expect(JSON.stringify(server.body)).not.toContain(TOKEN);
  });

  it("is replaced by a PATCH: a URL without credentials removes them", async () => {
    const { d, rw } = await freshOrganization(cp);
    const created = await rw.post("/projects", { name: "Later private", server_id: d.server_id });
    const id = created.body.id as string;
    const patched = await rw.patch(`/projects/${id}`, { git_repo_url: CREDENTIALED });
    expect(patched.status).toBe(200);
    expect(patched.body.git_repo_url).toBe(BARE);
    expect(await rowText("projects", id)).not.toContain(TOKEN);
    expect((await q("select git_repo_credentials_enc from projects where id = $1", [id]))[0].git_repo_credentials_enc).toEqual(expect.any(String));

    const cleared = await rw.patch(`/projects/${id}`, { git_repo_url: "https://git.example.com/acme/public.git" });
    expect(cleared.body.git_repo_url).toBe("https://git.example.com/acme/public.git");
    expect((await q("select git_repo_credentials_enc from projects where id = $1", [id]))[0].git_repo_credentials_enc).toBeNull();
    const removed = await rw.patch(`/projects/${id}`, { git_repo_url: null });
    expect(removed.body.git_repo_url).toBeNull();
  });

  it("is not replayed with the token from an idempotency record", async () => {
    const { d, rw } = await freshOrganization(cp);
    const key = randomUUID();
    const first = await rw.post("/projects", { name: "Idem private", server_id: d.server_id, git_repo_url: CREDENTIALED }, { "x-idempotency-key": key });
    const again = await rw.post("/projects", { name: "Idem private", server_id: d.server_id, git_repo_url: CREDENTIALED }, { "x-idempotency-key": key });
    expect(again.headers["x-idempotency-replayed"]).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(JSON.stringify(await q("select * from idempotency_records where key = $1", [key]))).not.toContain(TOKEN);
  });
});

describe("a webhook signing secret", () => {
  it("is stored sealed, shown once, and an idempotent replay withholds it", async () => {
    const { rw, ro } = await freshOrganization(cp);
    const key = randomUUID();
    const body = { url: "https://hooks.example.com/berth", events: ["deploy.completed"] };
    const created = await rw.post("/webhooks", body, { "x-idempotency-key": key });
    expect(created.status).toBe(201);
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(created.headers["x-idempotency-withheld"]).toBeUndefined();

    const [row] = await q("select secret, secret_enc from webhook_subscriptions where id = $1", [created.body.id]);
    expect(row.secret).toBeNull();
    expect(row.secret_enc).toEqual(expect.any(String));
    expect(await rowText("webhook_subscriptions", created.body.id)).not.toContain(secret);

    // The replay: same subscription, same body, the secret null and said so.
    const replay = await rw.post("/webhooks", body, { "x-idempotency-key": key });
    expect(replay.status).toBe(201);
    expect(replay.headers["x-idempotency-replayed"]).toBe("true");
    expect(replay.headers["x-idempotency-withheld"]).toBe("secret");
    expect(replay.body).toEqual({ ...created.body, secret: null });
    expect(JSON.stringify(await q("select * from idempotency_records where key = $1", [key]))).not.toContain(secret);

    expect(JSON.stringify((await ro.get(`/webhooks/${created.body.id}`)).body)).not.toContain(secret);
  });

  it("an enrolment token is not replayed either", async () => {
    const { rw } = await freshOrganization(cp);
    const key = randomUUID();
    const first = await rw.post("/servers", { name: "idem-server" }, { "x-idempotency-key": key });
    expect(first.status).toBe(201);
    const token = first.body.enrollment.token as string;
    const replay = await rw.post("/servers", { name: "idem-server" }, { "x-idempotency-key": key });
    expect(replay.status).toBe(201);
    expect(replay.headers["x-idempotency-withheld"]).toBe("enrollment.token,enrollment.install_command");
    expect(replay.body).toEqual({ ...first.body, enrollment: { ...first.body.enrollment, token: null, install_command: null } });
    expect(JSON.stringify(await q("select * from idempotency_records where key = $1", [key]))).not.toContain(token);
  });
});

describe("rows written in clear before migration 0011", () => {
  it("are sealed by the control plane, and keep working meanwhile", async () => {
    const { d, rw, ro } = await freshOrganization(cp);
    const project = await rw.post("/projects", { name: "Legacy", server_id: d.server_id });
    const projectId = project.body.id as string;
    await q("update projects set git_repo_url = $2, git_repo_credentials_enc = null where id = $1", [projectId, CREDENTIALED]);
    const hook = await rw.post("/webhooks", { url: "https://hooks.example.com/legacy", events: ["deploy.completed"] });
    const legacySecret = "whsec_legacyClearSecretFromBeforeTheMigration";
    await q("update webhook_subscriptions set secret = $2, secret_enc = null where id = $1", [hook.body.id, legacySecret]);

    // Before sealing, responses never show the credentials either.
    expect((await ro.get(`/projects/${projectId}`)).body.git_repo_url).toBe(BARE);

    expect(await cp.app.services.projects.sealStoredCredentials()).toBeGreaterThanOrEqual(1);
    expect(await cp.app.services.webhooks.sealStoredSecrets()).toBeGreaterThanOrEqual(1);
    expect(await q("select id from projects where git_repo_url like '%@%'")).toEqual([]);
    expect(await q("select id from webhook_subscriptions where secret is not null")).toEqual([]);
    expect(await rowText("projects", projectId)).not.toContain(TOKEN);
    expect(await rowText("webhook_subscriptions", hook.body.id)).not.toContain(legacySecret);

    // The sealed credentials still reach the agent.
    const env = await rw.post("/environments", { project_id: projectId, name: "production" });
    const deploy = await rw.post(`/environments/${env.body.id}/deploy`);
    expect(deploy.status, JSON.stringify(deploy.body)).toBe(202);
    expect((await commandParams(deploy.body.task_id)).params.git?.url).toBe(CREDENTIALED);
  });

  it("leave an ssh URL's user alone, and the walk ends (it once read such a row again and again, and start never finished)", async () => {
    const { d, rw } = await freshOrganization(cp);
    const project = await rw.post("/projects", { name: "Over ssh", server_id: d.server_id, git_repo_url: "ssh://git@git.example.com/acme/erp.git" });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
    const sealing = cp.app.services.projects.sealStoredCredentials();
    const outcome = await Promise.race([sealing.then(() => "done"), new Promise((r) => setTimeout(r, 10_000, "still walking"))]);
    expect(outcome).toBe("done");
    expect((await q("select git_repo_url from projects where id = $1", [project.body.id]))[0]).toEqual({ git_repo_url: "ssh://git@git.example.com/acme/erp.git" });
  });
});
