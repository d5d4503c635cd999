// One environment through its whole life on the real Docker engine with the test images:
// deploy from a git commit, restart, stop and start, redeploy of a new commit, backup and
// restore, a corrupted backup refused, destroy. The data written through the ERP's HTTP
// endpoint must survive every step but the last. Needs `bash .ci/docker-setup.sh` first.
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_STEP_IDS, stepsForKind } from "@berth/protocol";
import { DOCKER_SOCKET } from "../agent/agent.test-helpers.ts";
import {
  addRow,
  createExecutorHarness,
  createGitRepository,
  deployParams,
  ERP_IMAGE,
  finishSuite,
  requireTestImages,
  rowsOf,
  SUITE_LABEL,
  stepTrail,
  type Run,
} from "./executor.test-helpers.ts";

const SUITE = "executor-lifecycle";
const raw = new Dockerode({ socketPath: DOCKER_SOCKET });

function expectAllSteps(run: Run, kind: Parameters<typeof stepsForKind>[0]): void {
  expect(stepTrail(run)).toEqual(stepsForKind(kind).flatMap((step) => [`started:${step}`, `finished:${step}`]));
}

/** fetch will not send another Host header than the URL's: a plain request does. */
function getWithHost(port: number, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

describe("an environment's life on the real Docker engine", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 30_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const envDir = join(h.stateDir, "environments", env);
  const gitDir = mkdtempSync(join(tmpdir(), "berth-exec-git-"));
  let repo: Awaited<ReturnType<typeof createGitRepository>>;
  let v1 = "";
  let port: unknown = null;

  beforeAll(async () => {
    await requireTestImages(h.docker);
    repo = await createGitRepository(gitDir);
    v1 = await repo.commit("v1");
  }, 60_000);

  afterAll(() => finishSuite(SUITE, h, gitDir), 120_000);

  it("deploys in the 17 steps of the spec, and the ERP answers on its published port", async () => {
    const run = await h.run(
      "deploy",
      deployParams(env, { git: { url: repo.url, branch: "main", commit: v1 }, domain: "erp-test.example.com" }),
    );
    const result = resultOf(run);
    expect(DEPLOY_STEP_IDS).toHaveLength(17);
    expectAllSteps(run, "deploy");
    expect(result).toMatchObject({
      container_name: `berth-${env}-erp`,
      image: ERP_IMAGE,
      host_port: expect.any(Number),
      commit: v1,
      db_volume: `berth-${env}-pgdata`,
      healthy: true,
    });
    port = result.host_port;

    const body = await rowsOf(port);
    expect(body.addons_version).toBe("v1");
    expect(body.database).toBe("odoo");
    expect(body.rows.map((r) => r.note)).toEqual(["created on first start"]);

    // Every object carries Berth's labels and the environment's id.
    const filters = { label: [`berth.environment_id=${env}`] };
    const containers = await raw.listContainers({ all: true, filters });
    expect(containers.map((c) => c.Names[0]).sort()).toEqual([`/berth-${env}-db`, `/berth-${env}-erp`]);
    for (const c of containers) expect(c.Labels["berth.managed"]).toBe("true");
    expect((await raw.listNetworks({ filters })).map((n) => [n.Name, n.Labels?.["berth.managed"]])).toEqual([
      [`berth-${env}`, "true"],
    ]);
    // The data, and the database's socket directory the no-network loader reaches it through.
    expect((await raw.listVolumes({ filters })).Volumes?.map((v) => [v.Name, v.Labels?.["berth.managed"]]).sort()).toEqual([
      [`berth-${env}-pgdata`, "true"],
      [`berth-${env}-pgsocket`, "true"],
    ]);
    // Port 8069 published on loopback only.
    const erp = await raw.getContainer(String(result.container_id)).inspect();
    expect(erp.NetworkSettings.Ports["8069/tcp"]?.map((b) => b.HostIp)).toEqual(["127.0.0.1"]);
    expect(erp.HostConfig.NanoCpus).toBe(1e9);
    expect(erp.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(Object.keys(erp.NetworkSettings.Networks)).toEqual([`berth-${env}`]);

    // The password is made once, kept 0600, and never leaves in an event.
    const passwordFile = join(envDir, "db-password");
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    const password = readFileSync(passwordFile, "utf8").trim();
    expect(password.length).toBeGreaterThanOrEqual(24);
    expect(JSON.stringify(run.events)).not.toContain(password);
    const conf = readFileSync(join(envDir, "odoo.conf"), "utf8");
    expect(conf).toContain(`db_host = berth-${env}-db`);
    expect(conf).toContain(`db_password = ${password}`);
    expect(conf).toMatch(/^workers = 0$/m);
    // The guide's limit (virtual memory, compared by Odoo), not the container's 512 MiB.
    expect(conf).toMatch(/^limit_memory_hard = 1677721600$/m);
    expect(conf).toContain("addons_path = /mnt/extra-addons");
    expect(statSync(join(envDir, "odoo.conf")).mode & 0o777).toBe(0o600);

    // Routed through the run's proxy, which joined the environment's network; the name does not
    // resolve here, so no certificate is requested for it and plain HTTP says why.
    const proxy = await raw.getContainer(h.proxy.host.name).inspect();
    expect(Object.keys(proxy.NetworkSettings.Networks).sort()).toEqual([h.proxy.host.name, `berth-${env}`].sort());
    const state = await h.proxy.report(h.docker);
    expect(state.routes).toEqual([
      {
        environment_id: env,
        mode: "serving",
        domains: [expect.objectContaining({ name: "erp-test.example.com", dns: expect.objectContaining({ status: "unresolved" }), certificate: expect.objectContaining({ status: "not_requested" }) })],
      },
    ]);
    const httpPort = proxy.NetworkSettings.Ports["80/tcp"]?.[0]?.HostPort;
    const waiting = await getWithHost(Number(httpPort), "erp-test.example.com", "/web");
    expect(waiting.status).toBe(503);
    expect(waiting.body).toContain("does not resolve to this server yet");
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "verifying_dns", level: "warning", message: expect.stringContaining("erp-test.example.com has no DNS record: create erp-test.example.com A 127.0.0.1") }));

    // The steps with nothing to do say so.
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "cloning_platform_repos", message: "No platform repositories configured" }));
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "installing_dependencies", level: "info" }));
  }, 120_000);

  it("keeps the data across a restart", async () => {
    await addRow(port, "before restart");
    const run = await h.run("restart", { deployment_id: randomUUID(), environment_id: env });
    const result = resultOf(run);
    expectAllSteps(run, "restart");
    expect(result).toMatchObject({ state: "running", healthy: true, host_port: expect.any(Number) });
    port = result.host_port;
    expect((await rowsOf(port)).rows.map((r) => r.note)).toEqual(["created on first start", "before restart"]);
  }, 60_000);

  it("keeps the data across stop and start", async () => {
    const stopped = await h.run("stop", { deployment_id: randomUUID(), environment_id: env });
    expectAllSteps(stopped, "stop");
    expect(resultOf(stopped)).toMatchObject({ state: "exited", host_port: null });
    await expect(rowsOf(port)).rejects.toThrow();

    const started = await h.run("start", { deployment_id: randomUUID(), environment_id: env });
    expectAllSteps(started, "start");
    const result = resultOf(started);
    expect(result).toMatchObject({ state: "running", healthy: true });
    port = result.host_port;
    await addRow(port, "after start");
    expect((await rowsOf(port)).rows.map((r) => r.note)).toEqual(["created on first start", "before restart", "after start"]);
  }, 60_000);

  it("redeploys a new commit: the code changes, the rows and the database volume stay", async () => {
    const before = await rowsOf(port);
    const v2 = await repo.commit("v2");
    const run = await h.run("redeploy", deployParams(env, { git: { url: repo.url, branch: "main", commit: null } }));
    const result = resultOf(run);
    expectAllSteps(run, "redeploy");
    expect(result).toMatchObject({ commit: v2, db_volume: `berth-${env}-pgdata`, healthy: true });
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "initializing_database", message: expect.stringContaining("Existing database kept") }));
    port = result.host_port;
    const after = await rowsOf(port);
    expect(after.addons_version).toBe("v2");
    expect(after.rows).toEqual(before.rows);
    expect(after.filestore_marker).toBe(true);
    // The previous ERP container is gone; one ERP, one database.
    const containers = await raw.listContainers({ all: true, filters: { label: [`berth.environment_id=${env}`] } });
    expect(containers.map((c) => c.Labels["berth.role"]).sort()).toEqual(["db", "erp"]);
    // No domain any more: the route is gone and the proxy left the environment's network.
    expect((await h.proxy.report(h.docker)).routes).toEqual([]);
    const proxy = await raw.getContainer(h.proxy.host.name).inspect();
    expect(Object.keys(proxy.NetworkSettings.Networks)).toEqual([h.proxy.host.name]);
  }, 90_000);

  it("backs up, and a restore brings deleted rows back", async () => {
    const before = await rowsOf(port);
    const backupId = randomUUID();
    const backup = await h.run("backup", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId });
    expectAllSteps(backup, "backup");
    const result = resultOf(backup);
    expect(result).toMatchObject({ backup_id: backupId, created_at: expect.any(String) });
    const files = result.files as { name: string; size: number; sha256: string }[];
    expect(files.map((f) => f.name)).toEqual(["db.dump", "filestore.tar.gz"]);
    for (const f of files) {
      expect(f.size).toBeGreaterThan(0);
      expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
    const dir = join(h.stateDir, "backups", env, backupId);
    expect(JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"))).toMatchObject({ backup_id: backupId, files });
    expect(readFileSync(join(dir, "db.dump")).subarray(0, 5).toString()).toBe("PGDMP");

    const db = await h.docker.exec(`berth-${env}-db`, ["psql", "-U", "odoo", "-d", "odoo", "-c", "DELETE FROM berth_probe"], {
      deadlineMs: 10_000,
    });
    expect(db.exitCode, db.stderr).toBe(0);
    expect((await rowsOf(port)).rows).toEqual([]);

    const restore = await h.run("restore", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId });
    expectAllSteps(restore, "restore");
    const restored = resultOf(restore);
    expect(restored).toMatchObject({ backup_id: backupId, healthy: true });
    port = restored.host_port;
    const after = await rowsOf(port);
    expect(after.rows).toEqual(before.rows);
    expect(after.filestore_marker).toBe(true);
  }, 90_000);

  it("refuses to restore a backup whose file no longer matches its checksum, touching nothing", async () => {
    const backupId = randomUUID();
    resultOf(await h.run("backup", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId }));
    const dump = join(h.stateDir, "backups", env, backupId, "db.dump");
    const bytes = readFileSync(dump);
    bytes[bytes.length - 10] = (bytes[bytes.length - 10] ?? 0) ^ 0xff;
    writeFileSync(dump, bytes);
    const before = await rowsOf(port);

    const run = await h.run("restore", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId });
    expect(run.outcome).toMatchObject({
      ok: false,
      error: { code: "backup_corrupted", message: expect.stringMatching(/db\.dump does not match its manifest.*refusing to restore/) },
    });
    expect(stepTrail(run)).toEqual(["started:initializing", "failed:initializing"]);
    // The ERP never stopped.
    expect(await rowsOf(port)).toEqual(before);
  }, 60_000);

  it("destroys by label only: containers, volume, network and files go, the data dir stays, look-alikes survive", async () => {
    // Same-looking names, but not Berth's: no labels at all, or the environment's id without berth.managed.
    const unlabelled = await raw.createContainer({ name: `berth-${env}-erp-copy`, Image: ERP_IMAGE, Cmd: ["true"] });
    const spoofed = await raw.createContainer({
      name: `berth-${env}-db-copy`,
      Image: ERP_IMAGE,
      Cmd: ["true"],
      Labels: { "berth.environment_id": env, "berth.role": "db", [SUITE_LABEL]: SUITE, "berth.test.run": h.runId },
    });
    try {
      const run = await h.run("destroy", { deployment_id: randomUUID(), environment_id: env, delete_data: false });
      expectAllSteps(run, "destroy");
      expect(resultOf(run)).toMatchObject({ deleted_containers: true, deleted_database: true, deleted_data: false });

      const managed = { label: ["berth.managed=true", `berth.environment_id=${env}`] };
      expect(await raw.listContainers({ all: true, filters: managed })).toEqual([]);
      expect(await raw.listNetworks({ filters: managed })).toEqual([]);
      expect((await raw.listVolumes({ filters: managed })).Volumes ?? []).toEqual([]);
      expect(existsSync(join(envDir, "odoo.conf"))).toBe(false);
      expect(existsSync(join(envDir, "db-password"))).toBe(false);
      expect(existsSync(join(envDir, "data", "filestore"))).toBe(true);
      expect(existsSync(join(envDir, "addons", "VERSION"))).toBe(true);

      expect((await unlabelled.inspect()).Name).toBe(`/berth-${env}-erp-copy`);
      expect((await spoofed.inspect()).Name).toBe(`/berth-${env}-db-copy`);
    } finally {
      await unlabelled.remove({ force: true, v: true });
      await spoofed.remove({ force: true, v: true });
    }
  }, 60_000);
});
