// copy-from end to end (issue 34): a real control plane, the real agent processes and Docker.
// A project with production and staging on one server, both deployed; POST …/copy-from on
// staging with production as source (backup "fresh") runs as one copy operation: staging
// then serves production's rows, neutralised and re-keyed with staging's own address, while
// production kept serving and kept its rows and identity. Into production it is refused.
// Then as the new user tries it: a second staging on a second server (its own agent)
// refreshed from production goes through the backup store: production's data, neutralised
// (crons off, no live payment provider, the banner on), its mail caught by its own server's
// catcher, production serving throughout.
import { afterAll, beforeAll, expect, it } from "vitest";
import { erpPort, erpSql, keyPool } from "../support/erp-versions.ts";
import { removeEnvironmentObjects, startEnrolledAgent, startShop, type Shop } from "../support/real-agent.ts";
import type { AgentProcess } from "../support/agent-process.ts";
import { waitForValue, waitUntil } from "../support/wait.ts";

let shop: Shop;
let api: ReturnType<typeof keyPool>;
let staging: string;
let second: AgentProcess | undefined;
const envIds: string[] = [];

beforeAll(async () => {
  shop = await startShop("Copy shop", { cp: { baseDomain: "shop.example.test" }, agentEnv: { BERTH_CERTIFICATE_WAIT: "0" } });
  api = keyPool(shop.cp.app, shop.d.organization_id);
  const res = await (await api.write()).post("/environments", { project_id: shop.projectId, name: "staging", stage: "staging", cpu_cores: 1, ram_mb: 1024 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  staging = res.body.id;
  envIds.push(shop.envId, staging);
}, 120_000);

afterAll(async () => {
  await second?.cleanup();
  await shop?.agent.cleanup();
  await Promise.all([shop?.cp.close(), ...envIds.map((id) => removeEnvironmentObjects([id]))]);
}, 120_000);

/** Polls production's health every 200 ms while `work` runs; every answer. */
async function healthWhile<T>(work: () => Promise<T>): Promise<{ value: T; answers: number[] }> {
  const answers: number[] = [];
  let running = true;
  const polling = (async () => {
    while (running) {
      answers.push(await fetch(`http://127.0.0.1:${await erpPort(shop.envId)}/web/health`).then((r) => r.status, () => 0));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const value = await work().finally(() => (running = false));
  await polling;
  return { value, answers };
}

/** POSTs an action (202 with a task), then polls the task until it ends. */
async function act(path: string, body?: unknown): Promise<{ id: string; type: string; status: string; error_message: string | null }> {
  const res = await (await api.write()).post(path, body);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(202);
  return waitForValue(
    `${path} (task ${res.body.task_id}) to end`,
    async () => {
      const t = (await (await api.read()).get(`/deployments/${res.body.task_id}`)).body;
      return ["completed", "failed", "cancelled"].includes(t.status) ? t : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 300, detail: () => `${shop.agent.output.slice(-3000)}\n${second?.output.slice(-3000) ?? ""}` },
  );
}

const notes = async (env: string) => (await erpSql(env, "select note from berth_probe order by id")).split("\n");
const identity = async (env: string) =>
  JSON.parse(
    await erpSql(
      env,
      `select json_build_object('uuid', max(value) filter (where key = 'database.uuid'), 'secret', max(value) filter (where key = 'database.secret'),
         'url', max(value) filter (where key = 'web.base.url'), 'neutralized', max(value) filter (where key = 'database.is_neutralized')) from ir_config_parameter`,
    ),
  ) as { uuid: string; secret: string; url: string; neutralized: string | null };

it("refreshes staging from production in one operation: production's rows, neutralised and re-keyed, production serving throughout", async () => {
  const [prod, stag] = await Promise.all([act(`/environments/${shop.envId}/deploy`), act(`/environments/${staging}/deploy`)]);
  expect(prod.status, prod.error_message ?? "").toBe("completed");
  expect(stag.status, stag.error_message ?? "").toBe("completed");
  for (const note of ["order-1", "order-2"]) {
    const res = await fetch(`http://127.0.0.1:${await erpPort(shop.envId)}/berth/add?note=${note}`);
    expect(res.status).toBeLessThan(400);
  }
  const before = { notes: await notes(shop.envId), identity: await identity(shop.envId) };

  const refused = await (await api.write()).post(`/environments/${shop.envId}/copy-from`, { from_environment_id: staging });
  expect(refused).toMatchObject({ status: 409, body: { error: "copy_into_production" } });

  const { value: copy, answers } = await healthWhile(() => act(`/environments/${staging}/copy-from`, { from_environment_id: shop.envId }));
  expect(copy.status, copy.error_message ?? "").toBe("completed");
  expect(copy.type).toBe("copy");
  expect(answers.length).toBeGreaterThan(2);
  expect(answers.every((a) => a === 200)).toBe(true);

  expect(await notes(staging)).toEqual(before.notes);
  const copied = await identity(staging);
  expect(copied.uuid).not.toBe(before.identity.uuid);
  expect(copied.secret).not.toBe(before.identity.secret);
  expect(copied.url).toMatch(/^https:\/\/.*shop\.example\.test$/);
  expect(copied.neutralized).toBe("true");
  // Production: untouched.
  expect({ notes: await notes(shop.envId), identity: await identity(shop.envId) }).toEqual(before);
  const staged = (await (await api.read()).get(`/environments/${staging}`)).body;
  expect(staged.status).toBe("running");
}, 240_000);

it("refreshes a staging environment on another server from production through the backup store, neutralised, production serving throughout", async () => {
  const { cp, d } = shop;
  const server = await cp.app.services.enrollment.createServer(d.organization_id, { name: "staging-server" }, "system:test");
  second = await startEnrolledAgent(cp, d.organization_id, server.serverId);
  await waitUntil("second agent online", () => cp.app.gateway.isConnected(server.serverId), { timeoutMs: 60_000, intervalMs: 250, detail: () => second!.output.slice(-3000) });
  const res = await (await api.write()).post("/environments", { project_id: shop.projectId, name: "staging-remote", stage: "staging", server_id: server.serverId, cpu_cores: 1, ram_mb: 1024 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const remote = res.body.id as string;
  envIds.push(remote);
  const deployed = await act(`/environments/${remote}/deploy`);
  expect(deployed.status, deployed.error_message ?? "").toBe("completed");
  // Production takes payments (Odoo's payment module with a live provider) and has the web client (its banner view, off).
  const upgraded = await act(`/environments/${shop.envId}/deploy`, { modules: { upgrade: ["web", "payment"] } });
  expect(upgraded.status, upgraded.error_message ?? "").toBe("completed");
  expect(await erpSql(shop.envId, "select string_agg(code || ':' || state, ',' order by code) from payment_provider")).toBe("demo:test,stripe:enabled");
  const res2 = await fetch(`http://127.0.0.1:${await erpPort(shop.envId)}/berth/add?note=order-3`);
  expect(res2.status).toBeLessThan(400);
  const before = { notes: await notes(shop.envId), identity: await identity(shop.envId) };

  const { value: copy, answers } = await healthWhile(() => act(`/environments/${remote}/copy-from`, { from_environment_id: shop.envId }));
  expect(copy.status, copy.error_message ?? "").toBe("completed");
  expect(answers.length).toBeGreaterThan(2);
  expect(answers.every((a) => a === 200)).toBe(true);

  // Through the store: production has a backup made for it; the staging server has production's rows.
  const backups = (await (await api.read()).get(`/environments/${shop.envId}/backups`)).body.data as { comment: string | null; status: string; storage: string | null }[];
  expect(backups.find((b) => b.comment === "For the copy into staging-remote")).toMatchObject({ status: "completed", storage: expect.any(String) });
  expect(await notes(remote)).toEqual(before.notes);
  const copied = await identity(remote);
  expect(copied.uuid).not.toBe(before.identity.uuid);
  expect(copied.neutralized).toBe("true");
  // Odoo's own neutralisation (base, web, payment): crons off but the autovacuum, the banner view on, no live payment provider.
  expect(await erpSql(remote, "select count(*) from ir_cron c where active and not exists (select 1 from ir_model_data m where m.model = 'ir.cron' and m.res_id = c.id and m.name = 'autovacuum_job')")).toBe("0");
  // The customer's server and the dummy "invalid" one odoo neutralize added, both off (copy-mail.ts).
  expect(await erpSql(remote, "select string_agg(smtp_host || ':' || active, ',' order by id) from ir_mail_server")).toBe("smtp.customer.example:false,invalid:false");
  expect(await erpSql(remote, "select active from ir_ui_view where key = 'web.neutralize_banner'")).toBe("t");
  expect(await erpSql(remote, "select string_agg(code || ':' || state, ',' order by code) from payment_provider")).toBe("demo:test,stripe:disabled");
  // Its mail is caught: no mail server active (not even neutralize's dummy), so Odoo sends through odoo.conf, to the second server's catcher.
  const sent = await fetch(`http://127.0.0.1:${await erpPort(remote)}/berth/mail?subject=Invoice%20INV-7&to=customer%40example.com`, { signal: AbortSignal.timeout(20_000) });
  expect(sent.status, await sent.clone().text()).toBe(200);
  const caught = await waitForValue(
    "the staging mail in the catcher",
    async () => {
      const box = (await (await api.read()).get(`/environments/${remote}/mails`)).body as { data: { subject: string; to: string[] }[] };
      return box.data.find((m) => m.subject === "Invoice INV-7");
    },
    { timeoutMs: 30_000, intervalMs: 300 },
  );
  expect(caught.to).toEqual(["customer@example.com"]);
  // Production: untouched, not neutralised.
  expect({ notes: await notes(shop.envId), identity: await identity(shop.envId) }).toEqual(before);
  expect(await erpSql(shop.envId, "select count(*) from ir_cron where active")).not.toBe("0");
  expect(await erpSql(shop.envId, "select active from ir_ui_view where key = 'web.neutralize_banner'")).toBe("f");
  expect(await erpSql(shop.envId, "select state from payment_provider where code = 'stripe'")).toBe("enabled");
}, 300_000);
