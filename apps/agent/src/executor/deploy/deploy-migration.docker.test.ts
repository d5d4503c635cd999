// A deploy that restores a migration's backup (params.archive), with the real Docker engine,
// PostgreSQL and the stand-in ERP. The backup is made as the vendor's database manager makes
// it from a source environment (pg_dump --no-owner, a zip with dump.sql, manifest.json and
// filestore/; also the plain SQL file) and served by a local HTTP server standing in for the
// control plane's store. One target environment goes through: a first deploy that restores
// (neutralised), a force restore over the serving ERP, a force restore whose new release is
// unhealthy and one cancelled after the swap (both must leave the previous data and ERP
// serving), and a truncated backup (nothing touched). Needs `bash .ci/docker-setup.sh` first.
import { createHash, randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATION_RESTORE_PHASES, type DeployParams } from "@berth/protocol";
import { addRow, PRODUCTION_ONLY_SQL, createExecutorHarness, createGitRepository, deployParams, finishSuite, requireTestImages, rowsOf, type Run } from "../executor.test-helpers.ts";
import { backupDir, environmentLayout } from "../environment/environment-layout.ts";
import { ROLLED_BACK } from "../backup/restore.ts";
import { DOCKER_SOCKET } from "../../agent/agent.test-helpers.ts";

const SUITE = "executor-migration";

const raw = new Dockerode({ socketPath: DOCKER_SOCKET });
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

/** The migration_step markers of a run, in the order logged, with the step they were logged in. */
function markers(run: Run): { step: string | null; migration_step: unknown; skipped: unknown }[] {
  return run.events.flatMap((e) =>
    e.kind === "log" && e.data?.migration_step !== undefined ? [{ step: e.step, migration_step: e.data.migration_step, skipped: e.data.skipped }] : [],
  );
}

describe("a deploy that restores a migration's backup", () => {
  // The control plane's store: signed paths -> bytes.
  const store = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    const body = store.get(req.url ?? "");
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-length": String(body.length) }).end(body);
  });
  let h: ReturnType<typeof createExecutorHarness>;
  const source = randomUUID();
  const target = randomUUID();
  const work = mkdtempSync(join(tmpdir(), "berth-migration-"));
  const gitDir = mkdtempSync(join(tmpdir(), "berth-migration-git-"));
  const files: Record<string, Buffer> = {
    [`ab/ab${"1".repeat(38)}`]: Buffer.from("an invoice PDF\n"),
    [`cd/cd${"2".repeat(38)}`]: Buffer.from("a product image\n"),
  };
  let sourceNotes: string[] = [];

  const psql = async (env: string, sql: string, database = "odoo") => {
    const r = await h.docker.exec(`berth-${env}-db`, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", sql], { deadlineMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  const t = () => environmentLayout(h.stateDir, target);
  const erp = async () => {
    const c = await h.docker.inspectContainer(t().erpContainer);
    if (c === null) throw new Error("the target has no ERP container");
    return { id: c.id, running: c.running, port: c.hostPorts["8069/tcp"] };
  };
  const notes = async () => (await rowsOf((await erp()).port)).rows.map((r) => r.note);
  /** The ERP answers /web/health with 200 within 15 s (a resumed ERP takes a moment to listen). */
  const serving = async (): Promise<boolean> => {
    for (let i = 0; i < 50; i++) {
      const status = await fetch(`http://127.0.0.1:${String((await erp()).port)}/web/health`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) return true;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    return false;
  };
  /** What a restore may leave: copies, previous databases and data dirs, the journal. */
  const leftovers = async () => [
    ...(await psql(target, "SELECT string_agg(datname, ',') FROM pg_database WHERE datname ~ '^odoo_(restore|previous)_'", "postgres")).split(",").filter(Boolean),
    ...readdirSync(t().dir).filter((e) => /^(data-restore-|data-previous-|restore-state)/.test(e)),
  ];

  /** The archive param for `file` of the fixtures, served by the store under a new migration. */
  const archiveOf = (file: string, neutralize = false, body = readFileSync(join(work, file))): NonNullable<DeployParams["archive"]> => {
    const migrationId = randomUUID();
    store.set(`/store/migrations/${migrationId}/${file}`, body);
    return {
      migration_id: migrationId,
      path: `/store/migrations/${migrationId}`,
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      file: { name: file, size: body.length, sha256: sha(body) },
      neutralize,
    };
  };

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    h = createExecutorHarness(SUITE, { healthTimeoutMs: 6_000, healthIntervalMs: 300, stopGraceSeconds: 5 }, {}, {}, { controlPlaneUrl: `http://127.0.0.1:${String(port)}` });
    await requireTestImages(h.docker);

    // The ERP being moved in: rows, scheduled actions and a mail server a copy must not run.
    resultOf(await h.run("deploy", deployParams(source)));
    const sourcePort = (await h.docker.inspectContainer(environmentLayout(h.stateDir, source).erpContainer))!.hostPorts["8069/tcp"];
    for (const note of ["customer Acme", "invoice 2026/0001", "tab\there and a \\ backslash"]) await addRow(sourcePort, note);
    await psql(
      source,
      PRODUCTION_ONLY_SQL,
    );
    sourceNotes = (await rowsOf(sourcePort)).rows.map((r) => r.note);

    // The database manager's backup: pg_dump --no-owner (plain), manifest.json, the file store.
    const out = createWriteStream(join(work, "dump.sql"));
    const r = await h.docker.exec(`berth-${source}-db`, ["pg_dump", "-U", "odoo", "--no-owner", "-d", "odoo"], { deadlineMs: 60_000, stdout: out });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    for (const [path, body] of Object.entries(files)) {
      mkdirSync(join(work, "filestore", path.slice(0, 2)), { recursive: true });
      writeFileSync(join(work, "filestore", path), body);
    }
    writeFileSync(join(work, "manifest.json"), JSON.stringify({ odoo_dump: "1", db_name: "shop", version: "17.0", modules: { base: "17.0.1.3" } }));
    execFileSync("python3", [
      "-c",
      `import zipfile, os, sys
w = sys.argv[1]
with zipfile.ZipFile(os.path.join(w, "backup.zip"), "w", compression=zipfile.ZIP_DEFLATED) as z:
    z.write(os.path.join(w, "dump.sql"), "dump.sql")
    z.write(os.path.join(w, "manifest.json"), "manifest.json")
    for root, _, names in os.walk(os.path.join(w, "filestore")):
        for n in sorted(names):
            p = os.path.join(root, n)
            z.write(p, os.path.relpath(p, w))`,
      work,
    ]);
  }, 240_000);

  afterAll(async () => {
    server.close();
    await finishSuite(SUITE, h, work, gitDir);
  }, 180_000);

  it("restores the backup into a new environment: its rows and file store are served, neutralised, no -i base, the fetched file removed", async () => {
    const archive = archiveOf("backup.zip", true);
    // An administrator's password sent by mistake: the migrated database keeps its own users.
    const adminLogin = { password: "not-for-a-migrated-database", version: "2026-11-26T10:00:00.000Z" };
    const run = await h.run("deploy", deployParams(target, { archive, admin_login: adminLogin }));
    const result = resultOf(run);
    expect(result.migration_restore).toEqual({ migration_id: archive.migration_id, format: "zip", dump: "dump.sql", files: 2, neutralized: true, replaced_existing: false });
    expect(result.database).toMatchObject({ initialized: false });
    expect(result.admin_login).toBeNull();
    expect(await psql(target, "SELECT password FROM res_users WHERE id = 2")).toBe(await psql(source, "SELECT password FROM res_users WHERE id = 2"));

    // The ERP serves the migrated rows, exactly, and its file store as the ERP's user.
    expect(await notes()).toEqual(sourceNotes);
    expect(await psql(target, "SELECT count(*) FROM berth_probe")).toBe(String(sourceNotes.length));
    for (const [path, bytes] of Object.entries(files)) {
      const file = join(t().dataDir, "filestore", "odoo", path);
      expect(readFileSync(file)).toEqual(bytes);
      expect(statSync(file).uid).toBe(101);
    }
    // Each phase as it began, in order, inside starting_container.
    expect(markers(run)).toEqual(MIGRATION_RESTORE_PHASES.map((p) => ({ step: "starting_container", migration_step: p, skipped: undefined })));
    // No new database was initialised: the one-off init container (its lines are "init: ...") never ran.
    expect(run.logs.filter((l) => l.message.startsWith("init: ") || l.message.startsWith("New database"))).toEqual([]);
    // Neutralised before it ever served, by the image's own odoo neutralize: only the autovacuum
    // job runs, and Odoo's dummy mail server (invalid host) is the only one on.
    expect(await psql(target, "SELECT string_agg(cron_name, ',' ORDER BY id) FROM ir_cron WHERE active")).toBe("Base: Auto-vacuum internal data");
    expect(await psql(target, "SELECT string_agg(smtp_host, ',') FROM ir_mail_server WHERE active")).toBe("invalid");
    expect(await psql(target, "SELECT value FROM ir_config_parameter WHERE key = 'database.is_neutralized'")).toBe("true");
    // Re-keyed as a copy: its own uuid and secret, not production's.
    for (const key of ["database.uuid", "database.secret"]) {
      const sql = `SELECT value FROM ir_config_parameter WHERE key = '${key}'`;
      expect(await psql(target, sql)).not.toBe(await psql(source, sql));
    }
    // The server keeps neither the fetched backup nor the empty database the swap put aside.
    expect(existsSync(backupDir(t(), archive.migration_id))).toBe(false);
    expect(await leftovers()).toEqual([]);
  }, 180_000);

  it("a force restore over the serving ERP replaces what changed since with the backup's data", async () => {
    const before = await erp();
    await addRow(before.port, "written after the first import");
    await psql(target, "UPDATE berth_probe SET note = 'edited after the import' WHERE id = 2");
    const run = await h.run("deploy", deployParams(target, { archive: archiveOf("dump.sql") }));
    const result = resultOf(run);
    expect(result.migration_restore).toMatchObject({ format: "sql", files: 0, neutralized: false, replaced_existing: true });
    expect(await notes()).toEqual(sourceNotes);
    // Not neutralised this time (production): the backup's scheduled actions and identity are as they were.
    expect(await psql(target, "SELECT count(*) FROM ir_cron WHERE active")).toBe("4");
    const uuid = "SELECT value FROM ir_config_parameter WHERE key = 'database.uuid'";
    expect(await psql(target, uuid)).toBe(await psql(source, uuid));
    // A plain SQL file has no file store: that phase is reported skipped.
    expect(markers(run).map((m) => [m.migration_step, m.skipped])).toEqual([
      ["downloading_backup", undefined],
      ["extracting_backup", undefined],
      ["restoring_database", undefined],
      ["restoring_filestore", true],
      ["restarting_container", undefined],
    ]);
    // The old ERP served while the copy loaded and was verified; it stopped only for the swap.
    const messages = run.logs.map((l) => l.message);
    const verified = messages.findIndex((m) => m.startsWith("Verified: "));
    expect(verified).toBeGreaterThan(-1);
    expect(messages.findIndex((m) => m.startsWith("The ERP is stopped for the swap"))).toBeGreaterThan(verified);
    expect(await leftovers()).toEqual([]);
  }, 180_000);

  it("a force restore whose new release is unhealthy, or that is cancelled after the swap, leaves the previous data and ERP serving", async () => {
    const repo = await createGitRepository(gitDir);
    const unhealthy = await repo.commit("broken", { BERTH_FAIL_HEALTH: "" });
    const before = await erp();
    await addRow(before.port, "kept when the restore fails");
    const kept = await notes();

    const archive = archiveOf("backup.zip");
    const failed = await h.run("deploy", deployParams(target, { archive, git: { url: repo.url, branch: "main", commit: unhealthy } }));
    expect(failed.outcome).toMatchObject({ ok: false, error: { code: "restore_unhealthy", message: expect.stringContaining(ROLLED_BACK) } });
    expect(markers(failed).at(-1)?.migration_step).toBe("restarting_container");
    expect(await erp()).toMatchObject({ id: before.id, running: true });
    expect(await serving()).toBe(true);
    expect(await notes()).toEqual(kept);
    expect(await leftovers()).toEqual([]);
    // The fetched backup stays for a retry, which finds it here.
    expect(existsSync(join(backupDir(t(), archive.migration_id), "backup.zip"))).toBe(true);

    const cancelled = await h.run("deploy", deployParams(target, { archive }), {
      onStep: (step, cancel) => {
        if (step === "health_check") cancel();
      },
    });
    // The command reports the cancel as such; the log says what was undone.
    expect(cancelled.outcome).toMatchObject({ ok: false, error: { code: "cancelled" } });
    expect(cancelled.logs).toContainEqual(expect.objectContaining({ level: "warning", message: expect.stringContaining(ROLLED_BACK) }));
    expect(cancelled.logs.map((l) => l.message)).toContain("The backup backup.zip is on this server already: nothing to fetch");
    expect(await erp()).toMatchObject({ id: before.id, running: true });
    expect(await serving()).toBe(true);
    expect(await notes()).toEqual(kept);
    expect(await leftovers()).toEqual([]);
  }, 240_000);

  it("a truncated backup fails the deploy with a clear error before anything live is touched", async () => {
    expect(await serving()).toBe(true);
    const before = await erp();
    const startedAt = async () => (await raw.getContainer(before.id).inspect()).State.StartedAt;
    const started = await startedAt();
    const kept = await notes();
    const zip = readFileSync(join(work, "backup.zip"));
    const run = await h.run("deploy", deployParams(target, { archive: archiveOf("backup.zip", false, zip.subarray(0, Math.floor(zip.length / 2))) }));
    expect(run.outcome).toMatchObject({ ok: false, error: { code: "archive_unreadable", message: expect.stringContaining("the zip cannot be read") } });
    // The ERP never stopped: same container, still serving the same rows.
    expect(await erp()).toMatchObject({ id: before.id, running: true });
    expect(await startedAt()).toBe(started);
    expect(await notes()).toEqual(kept);
    expect(await leftovers()).toEqual([]);
  }, 180_000);
});
