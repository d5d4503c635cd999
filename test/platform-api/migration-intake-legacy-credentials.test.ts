// Migrations written before migration 0024 keep their repository URL as it was given,
// credentials included (https://user:token@…). The control plane seals them at start, as a
// create stores them (record/record.service.ts sealStoredCredentials): the bare URL, and the
// userinfo sealed with the master key. Two replicas starting at once on the same database
// seal each row once, and a started migration still hands the credentials to the project it
// makes, so the deploy command the agent gets clones with them.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { open } from "../../apps/control-plane/src/lib/master-key.ts";
import { startControlPlane, TEST_MASTER_KEY, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { openedCommand } from "../support/stored-commands.ts";
import { waitUntil } from "../support/wait.ts";

const TOKEN = "ghp_L3gacyT0kenFromBeforeMigration0024";
const CREDENTIALED = `https://deploy-bot:${TOKEN}@git.example.com/acme/erp-addons.git`;
const BARE = "https://git.example.com/acme/erp-addons.git";

let first: TestControlPlane;
const replicas: TestControlPlane[] = [];
let demo: DemoOrganization;

beforeAll(async () => {
  first = await startControlPlane();
  demo = await createDemoOrganization(first.database.db, first.app.services);
}, 60_000);

afterAll(async () => {
  for (const r of replicas) await r.close();
  await first?.close();
});

const q = async (cp: TestControlPlane, text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

it("rows from before 0024 are sealed when the control plane starts (two replicas at once), and a started migration still clones with the credentials", async () => {
  const owner = await addPerson(first.app, "org_owner", { organizationId: demo.organization_id });
  const ids: string[] = [];
  for (const name of ["Legacy A", "Legacy B"]) {
    const created = await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "vendor_paas", project_name: name, data_processing_consent: true });
    expect(created.status).toBe(201);
    ids.push(created.body.id as string);
  }
  // As migration 0023 left them: the URL as given, nothing sealed; analysed and configured, ready to start.
  await q(
    first,
    "update migrations set git_repo_url = $2, git_repo_credentials_enc = null, git_branch = 'main', status = 'ready', erp_version_detected = '17.0', target_server_id = $3 where id = any($1)",
    [ids, CREDENTIALED, demo.server_id],
  );
  await first.stop();

  // Two replicas start at once on the same database.
  replicas.push(...(await Promise.all([startControlPlane({ url: first.url }), startControlPlane({ url: first.url })])));
  const [cp] = replicas as [TestControlPlane];

  const rows = await q(cp, "select id, git_repo_url, git_repo_credentials_enc, t::text as whole from migrations t where id = any($1)", [ids]);
  expect(rows).toHaveLength(2);
  for (const row of rows) {
    expect(row.git_repo_url).toBe(BARE);
    expect(open(TEST_MASTER_KEY, row.git_repo_credentials_enc)).toBe(`deploy-bot:${TOKEN}`);
    expect(row.whole).not.toContain(TOKEN);
  }
  expect(await q(cp, "select id from migrations where git_repo_url ~ '^https?://[^/?#]*@'")).toEqual([]);
  // A second run finds nothing left in clear.
  expect(await cp.app.services.migrations.record.sealStoredCredentials()).toBe(0);

  // Started, the migration makes its project with the credentials, and the deploy command clones with them.
  const person = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id });
  const started = await person.api.post(`/migrations/${ids[0]}/start`);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  let command: { sealed: string | null; signed: never } | undefined;
  await waitUntil("the deploy command", async () => {
    [command] = await q(cp, "select c.sealed, c.signed from agent_commands c join migrations m on m.deployment_id = c.deployment_id where m.id = $1", [ids[0]]);
    return command !== undefined;
  }, { timeoutMs: 30_000, intervalMs: 200 });
  const params = openedCommand(command!).params as { git: { url: string } | null };
  expect(params.git?.url).toBe(CREDENTIALED);
  const [project] = await q(cp, "select p.git_repo_url, p.git_repo_credentials_enc from projects p join migrations m on m.project_id = p.id where m.id = $1", [ids[0]]);
  expect(project.git_repo_url).toBe(BARE);
  expect(open(TEST_MASTER_KEY, project.git_repo_credentials_enc)).toBe(`deploy-bot:${TOKEN}`);
}, 120_000);
