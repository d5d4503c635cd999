// copy-from end to end (issue 34): a real control plane, the real agent process and Docker.
// A project with production and staging on one server, both deployed; POST …/copy-from on
// staging with production as source (backup "fresh") runs as one copy operation: staging
// then serves production's rows, neutralised and re-keyed with staging's own address, while
// production kept serving and kept its rows and identity. Into production it is refused.
import { afterAll, beforeAll, expect, it } from "vitest";
import { erpPort, erpSql, keyPool } from "../support/erp-versions.ts";
import { removeEnvironmentObjects, startShop, type Shop } from "../support/real-agent.ts";
import { waitForValue } from "../support/wait.ts";

let shop: Shop;
let api: ReturnType<typeof keyPool>;
let staging: string;
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
  await shop?.agent.cleanup();
  await Promise.all([shop?.cp.close(), ...envIds.map((id) => removeEnvironmentObjects([id]))]);
}, 120_000);

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
    { timeoutMs: 180_000, intervalMs: 300, detail: () => shop.agent.output.slice(-3000) },
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

  const answers: number[] = [];
  let copying = true;
  const polling = (async () => {
    while (copying) {
      answers.push(await fetch(`http://127.0.0.1:${await erpPort(shop.envId)}/web/health`).then((r) => r.status, () => 0));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const copy = await act(`/environments/${staging}/copy-from`, { from_environment_id: shop.envId }).finally(() => (copying = false));
  await polling;
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
