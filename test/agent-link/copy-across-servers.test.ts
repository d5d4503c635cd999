// copy-from "fresh" across servers (issue 34), over the real link with two simulated agents,
// one per server: the source's server is asked for a backup to the backup store (a normal
// backup, listed with the source's others), the copy on the target waits for it with no
// command, and the moment that backup's files have arrived the target's server gets the
// restore naming it (signed link and digests, no live dump). A backup that fails fails the
// copy, saying why, and leaves the target as it was; a busy source is refused before anything
// is made. A staging refresh on push (then_deploy) deploys the pushed commit once its copy
// succeeded, once, and not at all when the copy failed.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { SignedCommand } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { uploadBackupFiles } from "../support/backup-uploads.ts";
import { urlOf } from "../support/sse.ts";
import { waitFor, waitForValue } from "../support/wait.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let production: string;
let staging: string;
let otherServer: string;
const agents: SimAgent[] = [];
const pingers: NodeJS.Timeout[] = [];
/** How the source's agent answers the next backup: ok (files uploaded first), failed, or not yet. */
let backupOutcome: "ok" | "failed" | "hold" = "ok";
const held: { cmd: SignedCommand; agent: SimAgent }[] = [];
/** Restore commands the target's server got, with how its agent answers them. */
const restores: SignedCommand[] = [];
let restoreOutcome: "ok" | "failed" = "ok";

const rw = () => publicClient(cp.app, d.api_keys.org_rw);
const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
const operationsOf = async (env: string) => (await q("select kind, status, trigger from deployments where environment_id = $1 order by created_at", [env])).map((r) => `${r.kind}:${r.status}`);

function answerBackup(cmd: SignedCommand, agent: SimAgent) {
  if (backupOutcome === "hold") {
    held.push({ cmd, agent });
    return;
  }
  if (backupOutcome === "failed") {
    agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error: { code: "backup_failed", message: "pg_dump: disk full" } })]);
    return;
  }
  void uploadBackupFiles(urlOf(cp), cmd).then((files) => agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { files } })]));
}

function answerRestore(cmd: SignedCommand, agent: SimAgent) {
  restores.push(cmd);
  const failed = restoreOutcome === "failed";
  agent.sendEvents([
    agent.event({ kind: "command.result", command_id: cmd.command_id, ok: !failed, ...(failed ? { error: { code: "restore_failed", message: "neutralize failed" } } : { result: {} }) }),
  ]);
}

async function agentFor(serverId: string, onCommand: (cmd: SignedCommand, agent: SimAgent) => void) {
  const token = await cp.app.services.enrollment.newToken(d.organization_id, serverId, null);
  const agent = new SimAgent({ baseUrl: urlOf(cp), token: token.token, onCommand });
  await agent.enroll();
  await agent.connect();
  pingers.push(setInterval(() => agent.ping(), 300));
  agents.push(agent);
  await waitFor(async () => cp.app.gateway.isConnected(serverId), 5000);
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  production = d.environments.running;
  staging = d.environments.stopped;
  const [server] = await q(
    "insert into servers (organization_id, name, provider, region, hostname, cpu_cores, ram_mb, disk_gb) values ($1, 'staging-box', 'hetzner', 'fsn1', 'staging.example.com', 2, 4096, 40) returning id",
    [d.organization_id],
  );
  otherServer = server.id;
  await q("update environments set server_id = $2 where id = $1", [staging, otherServer]);
  await agentFor(d.server_id, (cmd, agent) => cmd.type === "backup" && answerBackup(cmd, agent));
  await agentFor(otherServer, (cmd, agent) => cmd.type === "restore" && answerRestore(cmd, agent));
});

afterAll(async () => {
  for (const p of pingers) clearInterval(p);
  for (const a of agents) a.close();
  await cp?.close();
});

/** Waits for the task to end; its row. */
async function ended(id: string) {
  return waitForValue(`task ${id} to end`, async () => {
    const [row] = await q("select status, error_message from deployments where id = $1", [id]);
    return ["success", "failed", "cancelled"].includes(row.status) ? (row as { status: string; error_message: string | null }) : undefined;
  });
}

it("backs the source up to the store now, the copy waiting without a command, then restores that backup on the target's server", async () => {
  backupOutcome = "hold";
  const res = await rw().post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const copyId = res.body.task_id as string;

  // The source: one backup operation, and a pending backup in its list saying what it is for.
  await waitFor(async () => held.length === 1, 5000);
  expect(await operationsOf(production)).toEqual(["backup:queued"]);
  const listed = (await rw().get(`/environments/${production}/backups`)).body.data as { id: string; status: string; comment: string }[];
  expect(listed).toHaveLength(1);
  expect(listed[0]).toMatchObject({ status: "pending", comment: "For the copy into staging" });
  // The copy: queued, nothing sent to the target's server while the backup is made.
  expect(await operationsOf(staging)).toEqual(["copy:queued"]);
  await cp.app.services.chains.run();
  expect(await q("select 1 from agent_commands where deployment_id = $1", [copyId])).toEqual([]);
  expect(restores).toHaveLength(0);

  // The backup's files arrive, its result too: the copy's command goes out at once (no maintenance run).
  const { cmd, agent } = held.shift()!;
  const files = await uploadBackupFiles(urlOf(cp), cmd);
  agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { files } })]);
  await waitFor(async () => restores.length === 1, 5000);
  const restore = restores[0]!;
  expect(restore.params).toMatchObject({
    deployment_id: copyId,
    environment_id: staging,
    backup_id: listed[0]!.id,
    source: { environment_id: production, files: expect.arrayContaining([expect.objectContaining({ name: "db.dump", sha256: files[0]!.sha256 })]) },
    copy: expect.any(Object),
  });
  expect((restore.params as { live_source?: unknown }).live_source).toBeUndefined();
  expect(await ended(copyId)).toMatchObject({ status: "success" });
  expect(((await rw().get(`/environments/${production}/backups`)).body.data as { status: string }[]).map((b) => b.status)).toEqual(["completed"]);
  // Nothing runs a second time.
  await cp.app.services.chains.run();
  expect(restores).toHaveLength(1);
});

it("a failed backup fails the copy saying why, the target as it was; a busy source is refused before anything is made", async () => {
  const statusBefore = (await q("select status from environments where id = $1", [staging]))[0].status;
  backupOutcome = "failed";
  const res = await rw().post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const copy = await ended(res.body.task_id);
  expect(copy.status).toBe("failed");
  expect(copy.error_message).toContain("copy_backup_failed");
  expect(copy.error_message).toContain("pg_dump: disk full");
  expect(restores).toHaveLength(1);
  expect((await q("select status from environments where id = $1", [staging]))[0].status).toBe(statusBefore);

  backupOutcome = "hold";
  const busyBackup = await rw().post(`/environments/${production}/backups`, { comment: "nightly" });
  expect(busyBackup.status, JSON.stringify(busyBackup.body)).toBe(202);
  const before = await operationsOf(staging);
  const refused = await rw().post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(refused.status, JSON.stringify(refused.body)).toBe(409);
  expect(refused.body.error).toBe("copy_source_busy");
  expect(refused.body.message).toContain("nothing was copied");
  expect(await operationsOf(staging)).toEqual(before);
  // Let the nightly backup end.
  const { cmd, agent } = held.shift()!;
  agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error: { code: "backup_failed", message: "stopped" } })]);
  await waitFor(async () => (await q("select 1 from deployments where environment_id = $1 and status in ('queued', 'running', 'pending')", [production])).length === 0, 5000);
});

it("a copy that names a deploy after it (staging refreshed on push) deploys the pushed commit once it succeeded, once; none after a failed copy", async () => {
  backupOutcome = "ok";
  const commit = randomUUID().replace(/-/g, "").slice(0, 40).padEnd(40, "0");
  const scope = { organizationId: d.organization_id, projectId: null };
  const then = { trigger: "git_push", then_deploy: { branch: "staging", commit, message: "Fix the invoice report" }, git_push: { host: "github", delivery_id: "d-1", branch: "staging", commit } };
  const copy = await cp.app.services.copyFrom.copyFrom(scope, staging, { from_environment_id: production }, { userId: null, apiKeyId: null }, then);
  expect(await ended(copy.id)).toMatchObject({ status: "success" });
  const deploys = await waitForValue("the deploy after the copy", async () => {
    const rows = await q("select id, trigger, git_commit, git_branch, extra_data from deployments where environment_id = $1 and kind = 'deploy'", [staging]);
    return rows.length > 0 ? rows : undefined;
  });
  expect(deploys).toHaveLength(1);
  expect(deploys[0]).toMatchObject({ trigger: "git_push", git_commit: commit, git_branch: "staging" });
  expect(deploys[0].extra_data).toMatchObject({ after_copy_id: copy.id, git_push: { delivery_id: "d-1" } });
  // Woken again (another replica, the minute's maintenance): still one.
  await q("update deployments set status = 'success', completed_at = now() where id = $1", [deploys[0].id]);
  await cp.app.services.chains.run();
  expect(await q("select 1 from deployments where environment_id = $1 and kind = 'deploy'", [staging])).toHaveLength(1);

  restoreOutcome = "failed";
  const failing = await cp.app.services.copyFrom.copyFrom(scope, staging, { from_environment_id: production }, { userId: null, apiKeyId: null }, then);
  expect(await ended(failing.id)).toMatchObject({ status: "failed" });
  await cp.app.services.chains.run();
  expect(await q("select 1 from deployments where environment_id = $1 and kind = 'deploy'", [staging])).toHaveLength(1);
  restoreOutcome = "ok";
});
