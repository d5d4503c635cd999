// Backups that leave the server, end to end: a real control plane with its local backup
// store, two real agent processes (two servers of one organisation) and the real Docker
// engine. A backup's files arrive in the store with the checksums the agent computed; they
// download through a signed link with the same SHA-256 (and by range); a tampered upload is
// refused and not kept; the backup restores onto an environment of the second server (its
// agent fetches the files), with the data there afterwards; another organisation cannot
// restore it; deleting it removes its bytes; a backup whose upload fails is failed with the
// reason.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import type { AgentProcess } from "../support/agent-process.ts";
import { publicClient } from "../support/http.ts";
import { removeEnvironmentObjects, startEnrolledAgent, startShop, type Shop } from "../support/real-agent.ts";
import { waitUntil } from "../support/wait.ts";
import { instanceSecret } from "../../apps/control-plane/src/db/instance-secrets.ts";
import { createBackupLinks } from "../../apps/control-plane/src/modules/backups/backup-links.ts";

let shop: Shop;
let second: AgentProcess;
let otherEnv: string;
let backupId: string;
const envIds: string[] = [];
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

beforeAll(async () => {
  shop = await startShop("Backup store shop");
  envIds.push(shop.envId);
  const { cp, d } = shop;
  // A second server of the same organisation, its own agent, a project and environment on it.
  const server = await cp.app.services.enrollment.createServer(d.organization_id, { name: "second-server" }, "system:test");
  const org = { organizationId: d.organization_id, projectId: null };
  const project = await cp.app.services.projects.create(org, { name: "Second shop", server_id: server.serverId, erp_version: "17.0" });
  otherEnv = (await cp.app.services.environments.create(org, { project_id: project.id, name: "copy", cpu_cores: 1, ram_mb: 1024 })).id;
  envIds.push(otherEnv);
  second = await startEnrolledAgent(cp, d.organization_id, server.serverId);
  await waitUntil("second agent online", () => cp.app.gateway.isConnected(server.serverId), { timeoutMs: 60_000, intervalMs: 250, detail: () => second.output.slice(-3000) });
}, 120_000);

afterAll(async () => {
  await second?.cleanup();
  await shop?.agent.cleanup();
  await shop?.cp.close();
  await removeEnvironmentObjects(envIds);
});

// Calls take turns over a pool of keys: one key may make 20 requests a minute.
const clients: ReturnType<typeof publicClient>[] = [];
let calls = 0;
async function api() {
  if (clients.length < 20) {
    const k = await shop.cp.app.services.apiKeys.create({ organizationId: shop.d.organization_id, projectId: null, access: "full_access", name: "e2e", createdBy: null });
    clients.push(publicClient(shop.cp.app, k.key));
  }
  return clients[calls++ % clients.length]!;
}

function until(what: string, check: () => Promise<boolean>, timeoutMs = 240_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => `first agent:\n${shop.agent.output.slice(-2000)}\nsecond agent:\n${second.output.slice(-2000)}` });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function task(id: string): Promise<any> {
  let t = { status: "queued" } as { status: string; error_message: string | null };
  await until(`task ${id} to finish`, async () => {
    t = (await (await api()).get(`/deployments/${id}`)).body;
    return ["completed", "failed", "cancelled"].includes(t.status);
  });
  return t;
}

async function act(env: string, action: string, body?: unknown) {
  const res = await (await api()).post(`/environments/${env}/${action}`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return { ...(await task(res.body.task_id)), backup_id: res.body.backup_id as string | undefined };
}

async function erpPort(env: string): Promise<number> {
  const { rows } = await shop.cp.database.pool.query(
    `select c.result from agent_commands c join deployments d on d.id = c.deployment_id
     where d.environment_id = $1 and c.result ? 'host_port' and c.result->>'host_port' is not null order by c.completed_at desc limit 1`,
    [env],
  );
  return Number(rows[0].result.host_port);
}

async function notes(env: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${await erpPort(env)}/berth/rows`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { rows: { note: string }[] }).rows.map((r) => r.note);
}

const base = () => `http://127.0.0.1:${(shop.cp.app.server.address() as { port: number }).port}`;
/** A link as the API answered it (requests through app.inject come from localhost:80), on the listening control plane. */
const onServer = (url: string) => `${base()}${new URL(url).pathname}`;

it("a backup's files arrive in the store with the checksums the agent computed", async () => {
  expect((await act(shop.envId, "deploy")).status).toBe("completed");
  expect((await fetch(`http://127.0.0.1:${await erpPort(shop.envId)}/berth/add?note=travels-far`)).status).toBeLessThan(400);

  const done = await act(shop.envId, "backups", { comment: "to move" });
  expect(done.status, done.error_message ?? "").toBe("completed");
  backupId = done.backup_id!;
  const listed = (await (await api()).get(`/environments/${shop.envId}/backups`)).body.data.find((b: { id: string }) => b.id === backupId);
  expect(listed).toMatchObject({ status: "completed", storage: "local", comment: "to move" });
  expect(listed.files.map((f: { name: string }) => f.name).sort()).toEqual(["db.dump", "filestore.tar.gz"]);

  const { rows } = await shop.cp.database.pool.query("select storage_key, stored_files from backups where id = $1", [backupId]);
  const stored = rows[0].stored_files as { name: string; size: number; sha256: string }[];
  expect(stored.map((f) => f.name).sort()).toEqual(["db.dump", "filestore.tar.gz", "manifest.json"]);
  for (const f of stored) {
    // The bytes in the store are what the agent declared and what the record says.
    const bytes = readFileSync(path.join(shop.cp.backupDir, ...rows[0].storage_key.split("/"), f.name));
    expect({ size: bytes.length, sha256: sha(bytes) }).toEqual({ size: f.size, sha256: f.sha256 });
    const reported = listed.files.find((x: { name: string }) => x.name === f.name);
    if (reported) expect(reported).toEqual(f);
  }
  // The manifest in the store lists the same checksums.
  const manifest = JSON.parse(readFileSync(path.join(shop.cp.backupDir, ...rows[0].storage_key.split("/"), "manifest.json"), "utf8"));
  expect(manifest.files).toEqual(listed.files);
  const { rows: logs } = await shop.cp.database.pool.query("select message from deployment_logs where deployment_id = $1", [done.id]);
  expect(logs.map((r: { message: string }) => r.message).join("\n")).toMatch(/Uploaded db\.dump to the backup store .*checksum confirmed/);
}, 600_000);

it("downloads through a signed link with the same sha256, by range too; expired and altered links are refused", async () => {
  const link = await (await api()).post(`/environments/${shop.envId}/backups/${backupId}/download`);
  expect(link.status, JSON.stringify(link.body)).toBe(200);
  expect(Date.parse(link.body.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
  expect(link.body.url).toMatch(/^http:\/\/localhost(:80)?\/downloads\/backups\/bkd_/);
  // The link's own URL lists the files, with no credential.
  const index = await (await fetch(onServer(link.body.url))).json();
  expect(index.files.map((f: { url: string }) => new URL(f.url).pathname)).toEqual(link.body.files.map((f: { url: string }) => new URL(f.url).pathname));

  for (const f of link.body.files as { name: string; size_bytes: number; sha256: string; url: string }[]) {
    const res = await fetch(onServer(f.url));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(f.size_bytes));
    expect(res.headers.get("x-checksum-sha256")).toBe(f.sha256);
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(sha(Buffer.from(await res.arrayBuffer()))).toBe(f.sha256);
  }
  const found = (link.body.files as { name: string; size_bytes: number; url: string }[]).find((f) => f.name === "db.dump")!;
  const dump = { ...found, url: onServer(found.url) };
  const whole = Buffer.from(await (await fetch(dump.url)).arrayBuffer());
  const part = await fetch(dump.url, { headers: { range: "bytes=10-99" } });
  expect(part.status).toBe(206);
  expect(part.headers.get("content-range")).toBe(`bytes 10-99/${dump.size_bytes}`);
  expect(Buffer.from(await part.arrayBuffer()).equals(whole.subarray(10, 100))).toBe(true);
  const past = await fetch(dump.url, { headers: { range: `bytes=${dump.size_bytes}-` } });
  expect(past.status).toBe(416);
  expect((await past.json()).error).toBe("range_not_satisfiable");

  // Altered: another backup id in the same signature.
  const token = new URL(dump.url).pathname.split("/")[3]!;
  const forged = await fetch(`${base()}/downloads/backups/${token.slice(0, 5)}${token[5] === "A" ? "B" : "A"}${token.slice(6)}/db.dump`);
  expect(forged.status).toBe(403);
  expect((await forged.json()).error).toBe("download_link_invalid");
  shop.cp.clock.advance(16 * 60_000);
  try {
    const expired = await fetch(dump.url);
    expect(expired.status).toBe(410);
    expect((await expired.json()).error).toBe("download_link_expired");
  } finally {
    shop.cp.clock.advance(-16 * 60_000);
  }
  // A key of another organisation cannot even ask for a link.
  const other = await createDemoOrganization(shop.cp.database.db, shop.cp.app.services);
  expect((await publicClient(shop.cp.app, other.api_keys.org_rw).post(`/environments/${shop.envId}/backups/${backupId}/download`)).status).toBe(404);
}, 120_000);

it("a tampered upload is refused and nothing of it is kept", async () => {
  // A pending backup of the second environment, and an upload token for it as its command would carry.
  const id = randomUUID();
  const key = `backups/${shop.d.organization_id}/${otherEnv}/${id}`;
  await shop.cp.database.pool.query(
    "insert into backups (id, organization_id, environment_id, deployment_id, storage, storage_key) values ($1, $2, $3, $4, 'local', $5)",
    [id, shop.d.organization_id, otherEnv, randomUUID(), key],
  );
  const links = createBackupLinks({ secret: await instanceSecret(shop.cp.database.db, "cursor_secret"), clock: shop.cp.clock });
  const { token } = links.issueUpload({ id }, 60_000);
  const body = Buffer.from("the real dump");
  const put = (declared: string, bytes: Buffer, auth = token) =>
    fetch(`${base()}/agent/v1/backups/${id}/files/db.dump`, {
      method: "PUT",
      headers: { authorization: `Bearer ${auth}`, "content-type": "application/octet-stream", "x-checksum-sha256": declared },
      body: new Uint8Array(bytes),
    });
  // The bytes changed on the way: the control plane computes another sha256 than declared.
  const tampered = await put(sha(body), Buffer.from("the fake dump"));
  expect(tampered.status).toBe(422);
  expect((await tampered.json()).error).toBe("upload_checksum_mismatch");
  expect(existsSync(path.join(shop.cp.backupDir, ...key.split("/"), "db.dump"))).toBe(false);
  const { rows } = await shop.cp.database.pool.query("select stored_files from backups where id = $1", [id]);
  expect(rows[0].stored_files).toEqual([]);
  // Another backup's token opens nothing.
  const foreign = await put(sha(body), body, links.issueUpload({ id: backupId }, 60_000).token);
  expect(foreign.status).toBe(401);
  // The same file intact is kept.
  const ok = await put(sha(body), body);
  expect(ok.status).toBe(200);
  expect(await ok.json()).toEqual({ name: "db.dump", size: body.length, sha256: sha(body) });
  await shop.cp.database.pool.query("delete from backups where id = $1", [id]);
});

it("restores the backup onto an environment of the second server, whose agent fetches it; another organisation gets 404", async () => {
  expect((await act(otherEnv, "deploy")).status).toBe("completed");
  expect(await notes(otherEnv)).not.toContain("travels-far");

  const other = await createDemoOrganization(shop.cp.database.db, shop.cp.app.services);
  const foreign = await publicClient(shop.cp.app, other.api_keys.org_rw).post(`/environments/${other.environments.running}/restore`, { backup_id: backupId });
  expect(foreign.status).toBe(404);

  const restored = await act(otherEnv, "restore", { backup_id: backupId });
  expect(restored.status, restored.error_message ?? "").toBe("completed");
  await until("ERP up after the restore", async () => fetch(`http://127.0.0.1:${await erpPort(otherEnv)}/web/health`).then((r) => r.ok, () => false));
  expect(await notes(otherEnv)).toContain("travels-far");
  const { rows } = await shop.cp.database.pool.query("select message from deployment_logs where deployment_id = $1", [restored.id]);
  const log = rows.map((r: { message: string }) => r.message).join("\n");
  expect(log).toMatch(/not on this server: fetching 3 files/);
  expect(log).toMatch(/every file matches its signed sha256/);
  // Another environment's backup is a copy: neutralised by the image's own odoo neutralize and
  // re-keyed with this environment's address before it served.
  expect(log).toMatch(/Neutralised by the image's own odoo neutralize/);
  expect(log).toMatch(/Re-keyed as a copy: new database\.uuid and database\.secret, web\.base\.url https?:\/\//);
}, 600_000);

it("deleting the backup removes its bytes from the store and its record", async () => {
  const { rows } = await shop.cp.database.pool.query("select storage_key from backups where id = $1", [backupId]);
  const dir = path.join(shop.cp.backupDir, ...rows[0].storage_key.split("/"));
  expect(existsSync(dir)).toBe(true);
  const link = await (await api()).post(`/environments/${shop.envId}/backups/${backupId}/download`);
  const res = await (await api()).delete(`/environments/${shop.envId}/backups/${backupId}`);
  expect(res.status).toBe(204);
  expect(existsSync(dir)).toBe(false);
  const listed = (await (await api()).get(`/environments/${shop.envId}/backups`)).body.data as { id: string }[];
  expect(listed.map((b) => b.id)).not.toContain(backupId);
  expect((await fetch(onServer(link.body.files[0].url))).status).toBe(404);
  expect((await (await api()).delete(`/environments/${shop.envId}/backups/${backupId}`)).status).toBe(404);
});

it("a backup whose upload fails is failed, with the reason, and leaves nothing on its server", async () => {
  // The store cannot write: its folder is a file for the time of this backup.
  const away = `${shop.cp.backupDir}.away`;
  renameSync(shop.cp.backupDir, away);
  writeFileSync(shop.cp.backupDir, "not a folder");
  let failed;
  try {
    failed = await act(shop.envId, "backups", { comment: "nowhere to go" });
  } finally {
    rmSync(shop.cp.backupDir, { force: true });
    renameSync(away, shop.cp.backupDir);
  }
  expect(failed.status).toBe("failed");
  expect(failed.error_message).toMatch(/upload of db\.dump .* failed after 3 tries: the control plane answered 500/);
  const listed = (await (await api()).get(`/environments/${shop.envId}/backups`)).body.data.find((b: { id: string }) => b.id === failed.backup_id);
  expect(listed).toMatchObject({ status: "failed", error_message: failed.error_message });
  expect(existsSync(path.join(shop.agent.stateDir, "backups", shop.envId, failed.backup_id!))).toBe(false);
}, 300_000);
