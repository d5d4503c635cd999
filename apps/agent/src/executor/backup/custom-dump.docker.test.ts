// Custom-format dumps (pg_dump -Fc) restored as a migration's backup, with the real Docker
// engine: the ERP stand-in's database dumped with pg_dump -Fc, served by a store as a bare
// .dump and as an Odoo zip holding dump.dump and the file store, each restored by the restore
// command (fetch, pg_restore as the loader role in the no-network container, verify, swap):
// the ERP then serves the dump's rows, not what it had. Archives written byte by byte with a
// plpython3u function or a COPY ... TO PROGRAM are refused with dump_unsafe before pg_restore
// runs: no loader container is made, and the restore database stays empty.
// Needs `bash .ci/docker-setup.sh` first.
import { createHash, randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { erpCustomDump } from "../../../../../packages/protocol/src/pg-custom-archive.test-helpers.ts";
import { ENVIRONMENT_LABEL, ROLE_LABEL } from "../../docker/labels.ts";
import { createDatabase, dropDatabase } from "../environment/database-swap.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf } from "../environment/erp-container.ts";
import { addRow, createExecutorHarness, deployParams, finishSuite, requireTestImages, rowsOf } from "../executor.test-helpers.ts";
import { loadDump } from "./archive-restore.ts";

const SUITE = "executor-custom-dump";

describe("custom-format dumps (pg_dump -Fc) as a migration's backup", () => {
  const work = mkdtempSync(join(tmpdir(), "berth-custom-dump-"));
  const store = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    const body = store.get(req.url ?? "");
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-length": String(body.length) }).end(body);
  });
  let h: ReturnType<typeof createExecutorHarness>;
  const source = randomUUID();
  const target = randomUUID();
  const files: Record<string, Buffer> = { [`ab/ab${"1".repeat(38)}`]: Buffer.from("an attachment\n") };
  let notes: string[] = [];

  const erpPort = async (env: string) => hostPortOf(h.docker, (await h.docker.inspectContainer(environmentLayout(h.stateDir, env).erpContainer))!.id);
  const sql = async (env: string, query: string, database = "odoo") => {
    const r = await h.docker.exec(environmentLayout(h.stateDir, env).dbContainer, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", query], { deadlineMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };

  /** The target's loader containers Docker made since `since` (seconds): its own record of each pg_restore / psql run. */
  const loadersMadeSince = (since: number) =>
    execFileSync(
      "docker",
      ["events", "--since", String(since), "--until", String(Math.ceil(Date.now() / 1000) + 1), "--filter", "event=create", "--filter", `label=${ROLE_LABEL}=db-loader`, "--filter", `label=${ENVIRONMENT_LABEL}=${target}`, "--format", "{{.Actor.Attributes.name}}"],
      { encoding: "utf8" },
    ).trim();

  /** Runs the restore command of `name` served by the store; returns its outcome and log. */
  const restore = async (name: string) => {
    const body = store.get(`/store/migration/${name}`)!;
    return h.run("restore", {
      deployment_id: randomUUID(),
      environment_id: target,
      backup_id: randomUUID(),
      archive: {
        path: "/store/migration",
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        file: { name, size: body.length, sha256: createHash("sha256").update(body).digest("hex") },
      },
    });
  };

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    h = createExecutorHarness(SUITE, { healthTimeoutMs: 8_000, healthIntervalMs: 300 }, {}, {}, { controlPlaneUrl: `http://127.0.0.1:${String(port)}` });
    await requireTestImages(h.docker);
    for (const env of [source, target]) {
      const run = await h.run("deploy", deployParams(env));
      if (!run.outcome.ok) throw new Error(run.outcome.error.message);
    }
    for (const note of ["a customer", "tab\there and a \\ backslash"]) await addRow(await erpPort(source), note);
    await addRow(await erpPort(target), "written before the migration");
    notes = (await rowsOf(await erpPort(source))).rows.map((r) => r.note);

    // pg_dump -Fc, as a hosting's export or `pg_dump -Fc` by hand makes it.
    const r = await h.docker.exec(environmentLayout(h.stateDir, source).dbContainer, ["sh", "-c", "pg_dump -U odoo -Fc -d odoo | base64 -w0"], { deadlineMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    const dump = Buffer.from(r.stdout, "base64");
    expect(dump.toString("latin1", 0, 5)).toBe("PGDMP");
    store.set("/store/migration/backup.dump", dump);
    // An Odoo zip whose dump is dump.dump, with its file store.
    writeFileSync(join(work, "dump.dump"), dump);
    for (const [path, bytes] of Object.entries(files)) {
      mkdirSync(join(work, "filestore", path.slice(0, 2)), { recursive: true });
      writeFileSync(join(work, "filestore", path), bytes);
    }
    execFileSync("python3", [
      "-c",
      `import zipfile, os, sys
w = sys.argv[1]
with zipfile.ZipFile(os.path.join(w, "backup.zip"), "w", compression=zipfile.ZIP_DEFLATED) as z:
    z.write(os.path.join(w, "dump.dump"), "dump.dump")
    z.writestr("manifest.json", '{"odoo_dump": "1", "version": "17.0"}')
    for root, _, names in os.walk(os.path.join(w, "filestore")):
        for n in names:
            p = os.path.join(root, n)
            z.write(p, os.path.relpath(p, w))`,
      work,
    ]);
    store.set("/store/migration/backup.zip", readFileSync(join(work, "backup.zip")));
  }, 300_000);

  afterAll(async () => {
    server.close();
    if (h) await finishSuite(SUITE, h, work);
  }, 180_000);

  it("restores a bare .dump: pg_restore loads it, and the ERP serves its rows instead of what it had", async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const run = await restore("backup.dump");
    if (!run.outcome.ok) throw new Error(run.outcome.error.message);
    expect(loadersMadeSince(since)).not.toBe("");
    expect(run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^pg_restore loaded \(the file itself\) \(custom\) into odoo_restore_\w+ without error/));
    expect((await rowsOf(await erpPort(target))).rows.map((r) => r.note)).toEqual(notes);
    expect(await sql(target, "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'", "postgres")).toBe("0");
  }, 240_000);

  it("restores an Odoo zip whose dump is dump.dump: its rows and its file store", async () => {
    await addRow(await erpPort(target), "written after the first restore");
    const run = await restore("backup.zip");
    if (!run.outcome.ok) throw new Error(run.outcome.error.message);
    expect(run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^pg_restore loaded dump\.dump \(zip\) into odoo_restore_\w+ without error; 1 file store files/));
    expect((await rowsOf(await erpPort(target))).rows.map((r) => r.note)).toEqual(notes);
    const dataDir = environmentLayout(h.stateDir, target).dataDir;
    for (const [path, bytes] of Object.entries(files)) expect(readFileSync(join(dataDir, "filestore", "odoo", path))).toEqual(bytes);
  }, 240_000);

  it.each([
    [
      "a plpython3u function",
      { dumpId: 30, desc: "FUNCTION", tag: "pwn()", namespace: "public", defn: "CREATE FUNCTION public.pwn() RETURNS void\n    LANGUAGE plpython3u\n    AS $$import os; os.system('touch /tmp/pwned')$$;\n" },
      /FUNCTION pwn\(\) \(TOC entry 30\).*untrusted_language|untrusted_language.*FUNCTION pwn\(\)/s,
    ],
    [
      "a COPY ... TO PROGRAM as a table's COPY statement",
      { dumpId: 31, desc: "TABLE DATA", tag: "res_groups", namespace: "public", copyStmt: "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned';\n", data: "1\n" },
      /copy_program/,
    ],
  ])("refuses a custom dump holding %s with dump_unsafe, before pg_restore runs: no loader container, nothing created", async (_name, entry, message) => {
    const dbId = (await h.docker.inspectContainer(environmentLayout(h.stateDir, target).dbContainer))!.id;
    const database = `odoo_restore_${Date.now().toString(36)}${randomUUID().slice(0, 4)}`;
    await createDatabase(h.docker, dbId, database);
    const since = Math.floor(Date.now() / 1000) - 1;
    await expect(loadDump(h.docker, dbId, database, Readable.from([erpCustomDump([entry])]), 60_000)).rejects.toMatchObject({ code: "dump_unsafe", message: expect.stringMatching(message) });
    // Docker's own record: no loader container was made since the load began.
    expect(loadersMadeSince(since)).toBe("");
    expect(await sql(target, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace", database)).toBe("0");
    expect(await sql(target, "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'", "postgres")).toBe("0");
    await dropDatabase(h.docker, dbId, database);
  }, 120_000);
});
