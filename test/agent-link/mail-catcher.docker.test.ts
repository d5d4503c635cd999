// The mail of staging and development environments, end to end: a real agent (its mail
// catcher on its own Docker network), the stand-in ERP sending mail the way Odoo does
// (test/images/erp/mail.c: odoo.conf's smtp_* settings, AUTH, MAIL FROM with SIZE), and the
// control plane's API. A staging ERP's mail lands in its box with its HTML and attachments'
// names; another environment's login cannot put mail in that box; production is not wired to
// the catcher at all.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import { environmentLayout } from "../../apps/agent/src/executor/environment/environment-layout.ts";
import type { AgentProcess } from "../support/agent-process.ts";
import type { TestControlPlane } from "../support/control-plane.ts";
import { erpSql } from "../support/erp-versions.ts";
import { publicClient } from "../support/http.ts";
import { removeEnvironmentObjects, startShop } from "../support/real-agent.ts";
import { waitForValue, waitUntil } from "../support/wait.ts";

const docker = new Docker();
const MAIL_NETWORK = `berth-mail-test-${randomBytes(4).toString("hex")}`;

let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let production: string;
let staging: string;
let development: string;
let api: ReturnType<typeof publicClient>;

async function deployed(envId: string): Promise<void> {
  const started = await api.post(`/environments/${envId}/deploy`);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  await waitUntil(
    `deployment of ${envId}`,
    async () => {
      const task = (await api.get(`/deployments/${started.body.task_id}`)).body as { status: string; error_message?: string };
      if (task.status === "failed") throw new Error(`deploy failed: ${task.error_message}`);
      return task.status === "completed";
    },
    { timeoutMs: 120_000, intervalMs: 500, detail: () => agent.output.slice(-3000) },
  );
}

/** The ERP container's address on its environment's network (this host reaches it). */
async function erpAddress(envId: string): Promise<string> {
  const info = await docker.getContainer(`berth-${envId}-erp`).inspect();
  return info.NetworkSettings.Networks[`berth-${envId}`]!.IPAddress;
}

/** Asks the stand-in ERP to send one mail (GET /berth/mail), as Odoo's send_email would. */
async function sendFrom(envId: string, query: Record<string, string | string[]>): Promise<{ status: number; body: { sent?: boolean; error?: string } }> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) for (const one of [v].flat()) params.append(k, one);
  const res = await fetch(`http://${await erpAddress(envId)}:8069/berth/mail?${params}`, { signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as { sent?: boolean; error?: string } };
}

/** The ERP's /etc/odoo/odoo.conf: the file of the agent's state dir mounted there. */
async function odooConf(envId: string): Promise<string[]> {
  return (await readFile(environmentLayout(agent.stateDir, envId).configFile, "utf8")).split("\n");
}
const smtpLines = (conf: string[]) => conf.filter((l) => l.includes("smtp_"));
const confValue = (conf: string[], key: string) => conf.find((l) => l.includes(`${key} = `))?.split(" = ")[1]?.trim();

beforeAll(async () => {
  let envId: string;
  let projectId: string;
  ({ cp, d, agent, envId, projectId } = await startShop("Mail shop", { agentEnv: { BERTH_MAIL_NETWORK: MAIL_NETWORK, BERTH_MAIL_PORT: "auto" } }));
  production = envId;
  const org = { organizationId: d.organization_id, projectId: null };
  staging = (await cp.app.services.environments.create(org, { project_id: projectId, name: "staging", git_branch: "staging", stage: "staging" })).id;
  development = (await cp.app.services.environments.create(org, { project_id: projectId, name: "dev-feature", git_branch: "feature", stage: "development" })).id;
  api = publicClient(cp.app, d.api_keys.org_rw);
  await Promise.all([deployed(production), deployed(staging), deployed(development)]);
}, 300_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  await removeEnvironmentObjects([production, staging, development].filter(Boolean));
  await docker.getNetwork(MAIL_NETWORK).remove().catch(() => {});
});

describe("mail of non-production environments", () => {
  it("a staging ERP's mail reaches the catcher and appears in GET …/mails with its HTML and attachments' names", async () => {
    const conf = await odooConf(staging);
    const gateway = (await docker.getNetwork(MAIL_NETWORK).inspect()).IPAM?.Config?.[0]?.Gateway as string;
    expect(confValue(conf, "smtp_server")).toBe(gateway);
    expect(confValue(conf, "smtp_user")).toBe(staging);
    // Its deploy turned off the database's own outgoing server (Odoo would send through any active one, not odoo.conf); production's is on.
    expect(await erpSql(staging, "select string_agg(smtp_host || ':' || active, ',' order by id) from ir_mail_server")).toBe("smtp.customer.example:false");
    expect(await erpSql(production, "select string_agg(smtp_host || ':' || active, ',' order by id) from ir_mail_server")).toBe("smtp.customer.example:true");

    const sent = await sendFrom(staging, { subject: "Invoice INV/2026/0001", to: "customer@client.example", attach: ["INV_2026_0001.pdf", "terms.txt"] });
    expect(sent, JSON.stringify(sent.body)).toMatchObject({ status: 200, body: { sent: true } });

    const listed = await waitForValue("the mail in the staging box", async () => {
      const list = (await api.get(`/environments/${staging}/mails`)).body as { data: { id: string; subject: string; to: string[]; attachments: string[] }[] };
      return list.data.find((m) => m.subject === "Invoice INV/2026/0001");
    }, { timeoutMs: 20_000, intervalMs: 200 });
    expect(listed.to).toEqual(["customer@client.example"]);
    expect(listed.attachments).toEqual(["INV_2026_0001.pdf", "terms.txt"]);
    const one = await api.get(`/environments/${staging}/mails/${listed.id}`);
    expect(one.status).toBe(200);
    expect(one.body.html).toContain("<b>Invoice INV/2026/0001</b>");
    expect(one.body.text).toContain("This is Invoice INV/2026/0001.");
    expect(one.body.attachments).toEqual([
      { filename: "INV_2026_0001.pdf", content_type: "application/pdf", size: 2048 },
      { filename: "terms.txt", content_type: "text/plain", size: 2048 },
    ]);
  });

  it("another environment's ERP cannot put mail in the staging box: its own login files mail in its own box, the staging login with its password is refused (535)", async () => {
    const devConf = await odooConf(development);
    const devPassword = confValue(devConf, "smtp_password")!;
    const forged = await sendFrom(development, { subject: "Forged into staging", user: staging, password: devPassword });
    expect(forged.status).toBe(500);
    expect(forged.body.error).toMatch(/^535 /);

    const own = await sendFrom(development, { subject: "Development's own" });
    expect(own.status).toBe(200);
    await waitForValue("the development mail", async () => {
      const list = (await api.get(`/environments/${development}/mails`)).body as { data: { subject: string }[] };
      return list.data.find((m) => m.subject === "Development's own");
    }, { timeoutMs: 20_000, intervalMs: 200 });
    const stagingBox = (await api.get(`/environments/${staging}/mails`)).body as { data: { subject: string }[] };
    expect(stagingBox.data.map((m) => m.subject)).toEqual(["Invoice INV/2026/0001"]);
  });

  it("production is not wired to the catcher: odoo.conf names no mail server, its mail goes to its own mail server (unreachable here), its box stays empty", async () => {
    expect(smtpLines(await odooConf(production))).toEqual([]);
    const sent = await sendFrom(production, { subject: "Production mail" });
    expect(sent.status).toBe(500);
    // The customer's outgoing server in its database (the stand-in's base data), as Odoo picks it: never turned off in production.
    expect(sent.body.error).toContain("smtp.customer.example:587");
    const box = (await api.get(`/environments/${production}/mails`)).body as { data: unknown[] };
    expect(box.data).toEqual([]);
  });
});
