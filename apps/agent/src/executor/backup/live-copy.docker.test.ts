// copy-from with backup "fresh" on one server (RestoreParams.live_source), on the real Docker
// engine with the test images: the target gets the source's rows and file store, neutralised
// by its image's own `odoo neutralize` and re-keyed, while the source keeps serving and is left
// exactly as it was; a copy that fails at the dump, the load, the neutralisation or the health
// check leaves the target as it was. One source and one target, reused by every case.
// Needs `bash .ci/docker-setup.sh` first.
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepsForKind, type RestoreParams } from "@berth/protocol";
import {
  addRow,
  createExecutorHarness,
  deployParams,
  finishSuite,
  PRODUCTION_ONLY_SQL,
  requireTestImages,
  rowsOf,
  stepTrail,
  type ExecutorHarness,
  type Run,
} from "../executor.test-helpers.ts";

type OnStep = NonNullable<NonNullable<Parameters<ExecutorHarness["run"]>[2]>["onStep"]>;

const SUITE = "executor-live-copy";
const BASE_URL = "https://staging.customer.example";

describe("a copy of another environment of this server, taken now", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 6_000, healthIntervalMs: 200, stopGraceSeconds: 5 });
  const source = randomUUID();
  const target = randomUUID();
  const ports: Record<string, unknown> = {};
  const envDir = (env: string) => join(h.stateDir, "environments", env);

  const psql = async (env: string, sql: string, database = "odoo"): Promise<string[]> => {
    const result = await h.docker.exec(`berth-${env}-db`, ["psql", "-U", "odoo", "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], { deadlineMs: 30_000 });
    if (result.exitCode !== 0) throw new Error(`psql: ${result.stderr}`);
    return result.stdout.split("\n").filter((l) => l !== "");
  };
  const param = async (env: string, key: string) => (await psql(env, `SELECT value FROM ir_config_parameter WHERE key = '${key}'`))[0];
  const health = async (env: string) =>
    fetch(`http://127.0.0.1:${String(ports[env])}/web/health`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, () => 0);

  /** Every file of the environment's file store: path, size, mtime, owner and inode. */
  const fileStore = (env: string) => {
    const root = join(envDir(env), "data", "filestore");
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else {
          const s = statSync(p);
          out.push(`${relative(root, p)} ${s.size} ${s.mtimeMs} ${s.uid}:${s.gid} ${s.ino} ${s.mode}`);
        }
      }
    };
    walk(root);
    return out.sort();
  };

  /** What a copy must never change: the environment's rows, identity, databases and file store. */
  const stateOf = async (env: string) => ({
    rows: (await rowsOf(ports[env])).rows,
    uuid: await param(env, "database.uuid"),
    secret: await param(env, "database.secret"),
    base_url: await param(env, "web.base.url"),
    active_crons: await psql(env, "SELECT count(*) FROM ir_cron WHERE active"),
    databases: await psql(env, "SELECT datname FROM pg_database WHERE datname LIKE 'odoo%' ORDER BY 1", "postgres"),
    leftovers: readdirSync(envDir(env)).filter((e) => /^(data-restore-|data-previous-|restore-state)/.test(e)),
    files: fileStore(env),
  });

  const copy = (options: { onStep?: OnStep } = {}) => {
    const params: RestoreParams = { deployment_id: randomUUID(), environment_id: target, backup_id: randomUUID(), live_source: { environment_id: source }, copy: { base_url: BASE_URL, catch_mail: true } };
    return h.run("restore", params, options.onStep ? { onStep: options.onStep } : {});
  };

  /** Runs `body` while the source's health is asked every 100 ms; every answer must be 200. */
  const whileSourceServes = async <T,>(body: () => Promise<T>): Promise<{ value: T; answers: number[] }> => {
    const answers: number[] = [];
    let done = false;
    const polling = (async () => {
      while (!done) {
        answers.push(await health(source));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      return { value: await body(), answers };
    } finally {
      done = true;
      await polling;
    }
  };

  const failureOf = (run: Run) => {
    if (run.outcome.ok) throw new Error("the copy succeeded");
    return run.outcome.error;
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    await Promise.all(
      [source, target].map(async (env) => {
        const run = await h.run("deploy", deployParams(env));
        if (!run.outcome.ok) throw new Error(`deploy: ${run.outcome.error.message}`);
        ports[env] = run.outcome.result.host_port;
      }),
    );
    await addRow(ports[source], "production's order 1");
    await addRow(ports[source], "production's order 2");
    await addRow(ports[target], "staging's own row");
    await psql(source, `${PRODUCTION_ONLY_SQL} CREATE TABLE copy_hold (x int);`);
    // An attachment the agent (root) wrote: not the ERP user's, so it is copied, not linked.
    mkdirSync(join(envDir(source), "data", "filestore", "odoo", "ab"), { recursive: true });
    writeFileSync(join(envDir(source), "data", "filestore", "odoo", "ab", "abcdef0123456789"), "production's invoice.pdf");
  }, 180_000);

  afterAll(() => finishSuite(SUITE, h), 120_000);

  it("copies rows and file store, neutralised and re-keyed, while the source serves and stays exactly as it was", async () => {
    const sourceBefore = await stateOf(source);
    const targetBefore = await stateOf(target);
    const { value: run, answers } = await whileSourceServes(() => copy());
    if (!run.outcome.ok) throw new Error(`copy: ${run.outcome.error.code}: ${run.outcome.error.message}`);
    expect(stepTrail(run)).toEqual(stepsForKind("copy").flatMap((s) => [`started:${s}`, `finished:${s}`]));
    ports[target] = run.outcome.result.host_port;

    // The source kept serving and was only read.
    expect(answers.length).toBeGreaterThan(3);
    expect(answers.every((a) => a === 200)).toBe(true);
    expect(await stateOf(source)).toEqual(sourceBefore);

    const after = await stateOf(target);
    expect(after.rows).toEqual(sourceBefore.rows);
    expect(after.rows).not.toEqual(targetBefore.rows);
    expect((await rowsOf(ports[target])).filestore_marker).toBe(true);
    expect(readFileSync(join(envDir(target), "data", "filestore", "odoo", "ab", "abcdef0123456789"), "utf8")).toBe("production's invoice.pdf");
    // Re-keyed: its own uuid, secret and address.
    expect(after.uuid).not.toBe(sourceBefore.uuid);
    expect(after.secret).not.toBe(sourceBefore.secret);
    expect(after.base_url).toBe(BASE_URL);
    // Neutralised by the image's own odoo neutralize: only the autovacuum cron. Its mail is caught
    // (catch_mail): no mail server on, not even the dummy one neutralize adds, so odoo.conf decides.
    expect(await psql(target, "SELECT string_agg(cron_name, ',' ORDER BY id) FROM ir_cron WHERE active")).toEqual(["Base: Auto-vacuum internal data"]);
    expect(await psql(target, "SELECT count(*) FILTER (WHERE active) || ' ' || count(*) FILTER (WHERE name = 'neutralization - disable emails') FROM ir_mail_server")).toEqual(["0 1"]);
    expect(after.databases).toEqual(["odoo"]);
    expect(after.leftovers).toEqual([]);
    const messages = run.logs.map((l) => l.message);
    expect(messages).toContainEqual(expect.stringMatching(/^Outgoing mail servers turned off: [1-9]\d*; its mail goes to this server's mail catcher$/));
    // Both databases have socket volumes: the bytes go from pg_dump to pg_restore inside one loader container, not through the agent.
    expect(messages).toContainEqual(expect.stringMatching(/^pg_dump of the source streamed into odoo_restore_[a-z0-9]+ by pg_restore without error, in one loader container \(/));
    // The ERP's own marker file is the ERP user's: linked; the agent's file: copied.
    expect(messages).toContainEqual(expect.stringMatching(/^File store copied into data-restore-[a-z0-9]+: 2 files, 1 hard-linked, 24 bytes copied/));
  }, 120_000);

  /** Runs a copy that must fail with `code`, and checks target and source are exactly as they were. */
  const failingCopy = async (code: string, during: Parameters<typeof copy>[0] = {}) => {
    const sourceBefore = await stateOf(source);
    const targetBefore = await stateOf(target);
    const run = await copy(during);
    const error = failureOf(run);
    expect(error.code).toBe(code);
    expect(await stateOf(source)).toEqual(sourceBefore);
    return { run, error, targetBefore };
  };

  it("a dump that fails midway (its backend terminated) leaves the target as it was", async () => {
    // A lock the dump must wait for, so it is still running when it is terminated.
    const holding = h.docker.exec(`berth-${source}-db`, ["psql", "-U", "odoo", "-d", "odoo", "-c", "BEGIN; LOCK TABLE copy_hold IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);"], {
      deadlineMs: 90_000,
    });
    const until = async (sql: string) => {
      for (let i = 0; i < 200; i++) {
        if ((await psql(source, sql))[0] === "t") return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`never true: ${sql}`);
    };
    await until("SELECT count(*) > 0 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'copy_hold' AND l.mode = 'AccessExclusiveLock' AND l.granted");
    let killing: Promise<void> = Promise.resolve();
    const { run, error, targetBefore } = await failingCopy("copy_dump_failed", {
      onStep: (step) => {
        if (step === "initializing_database") killing = until("SELECT bool_or(pg_terminate_backend(pid)) IS TRUE FROM pg_stat_activity WHERE application_name = 'pg_dump'");
      },
    });
    await killing;
    await psql(source, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()");
    await holding.catch(() => undefined);
    expect(error.message).toMatch(/^pg_dump of the source failed/);
    expect(stepTrail(run)).toContain("failed:initializing_database");
    expect(await stateOf(target)).toEqual(targetBefore);
    expect(await health(target)).toBe(200);
  }, 120_000);

  it("a source pg_restore cannot load (an event trigger: superuser only) leaves the target as it was", async () => {
    await psql(source, "CREATE FUNCTION copy_et() RETURNS event_trigger LANGUAGE plpgsql AS $$BEGIN END$$; CREATE EVENT TRIGGER copy_et ON ddl_command_start EXECUTE FUNCTION copy_et();");
    try {
      const { run, error, targetBefore } = await failingCopy("restore_failed");
      expect(error.message).toMatch(/^pg_restore failed/);
      expect(stepTrail(run)).toContain("failed:initializing_database");
      expect(await stateOf(target)).toEqual(targetBefore);
      expect(await health(target)).toBe(200);
    } finally {
      await psql(source, "DROP EVENT TRIGGER copy_et; DROP FUNCTION copy_et();");
    }
  }, 120_000);

  it("a neutralisation that fails leaves the target as it was (the copy never serves un-neutralised)", async () => {
    // A module installed in the source whose neutralize.sql, in the target's code, fails.
    await psql(source, "INSERT INTO ir_module_module (name, state) VALUES ('berth_copy_fail', 'installed')");
    const module = join(envDir(target), "addons", "berth_copy_fail");
    mkdirSync(join(module, "data"), { recursive: true });
    writeFileSync(join(module, "__manifest__.py"), "{'name': 'Fails to neutralise', 'version': '17.0.1.0.0'}\n");
    writeFileSync(join(module, "data", "neutralize.sql"), "UPDATE no_such_table SET x = 1;\n");
    try {
      const { run, error, targetBefore } = await failingCopy("neutralize_failed");
      expect(error.message).toContain("no_such_table");
      expect(stepTrail(run)).toContain("failed:initializing_database");
      expect(await stateOf(target)).toEqual(targetBefore);
      expect(await health(target)).toBe(200);
    } finally {
      rmSync(module, { recursive: true, force: true });
      await psql(source, "DELETE FROM ir_module_module WHERE name = 'berth_copy_fail'");
    }
  }, 120_000);

  it("an ERP that does not start on the copy gets the target's previous database and file store back", async () => {
    const hook = join(envDir(target), "addons", "BERTH_FAIL_START");
    writeFileSync(hook, "");
    let targetBefore;
    try {
      const failed = await failingCopy("restore_unhealthy");
      targetBefore = failed.targetBefore;
      expect(stepTrail(failed.run).slice(-2)).toEqual(["started:health_check", "failed:health_check"]);
      expect(failed.run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^Swapped back: database odoo_previous_[a-z0-9]+ is "odoo" again$/));
    } finally {
      rmSync(hook, { force: true });
    }
    // The hook stopped the ERP from starting again on the previous data too; without it, it serves that data.
    const erp = `berth-${target}-erp`;
    await h.docker.stopContainer(erp, 5);
    await h.docker.startContainer(erp);
    ports[target] = (await h.docker.inspectContainer(erp))?.hostPorts["8069/tcp"];
    for (let i = 0; (await health(target)) !== 200; i++) {
      if (i > 100) throw new Error("the target never served again");
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await stateOf(target)).toEqual(targetBefore);
  }, 120_000);
});
