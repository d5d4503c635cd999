// What the production tests share: commands run as an operator would, a fresh empty
// database on the tests' PostgreSQL (so the start's migrations run), HTTP checks.
import { execFile, type ExecFileOptions } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { ensureDatabase } from "@berth/db";

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never throws for a non-zero exit (the caller asserts). */
export function run(file: string, args: string[], opts: ExecFileOptions & { timeout: number }): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { maxBuffer: 64 * 1024 * 1024, ...opts }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : -1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) + (error && code === -1 ? String(error) : "") });
    });
  });
}

/** Like run, but throws with the output when the command fails. */
export async function ok(file: string, args: string[], opts: ExecFileOptions & { timeout: number }): Promise<string> {
  const r = await run(file, args, opts);
  if (r.code !== 0) throw new Error(`${file} ${args.join(" ")} exited ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
  return r.stdout;
}

/**
 * The environment of an operator's shell: this process's, without what `npm test` itself set
 * (npm_* variables, INIT_CWD), so the commands under test are not steered by the outer npm.
 */
export function operatorEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== "INIT_CWD") env[k] = v;
  return { ...env, ...extra };
}

export interface EmptyDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A new database with no tables: the control plane under test migrates it on start. */
export async function emptyDatabase(): Promise<EmptyDatabase> {
  const adminUrl = inject("pgAdminUrl");
  const name = `berth_prod_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await ensureDatabase(adminUrl, name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists "${name}" with (force)`).catch(() => {});
      await c.end();
    },
  };
}

export const newMasterKey = () => randomBytes(32).toString("base64");

/** GET base + path, or null when nothing answers yet. */
export async function get(base: string, path: string, init?: RequestInit): Promise<Response | null> {
  try {
    return await fetch(new URL(path, base), { ...init, signal: AbortSignal.timeout(5000) });
  } catch {
    return null;
  }
}

/** The migrations folder's file count, to check that the database under test got them all. */
export async function appliedMigrations(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query("select count(*) from drizzle.__drizzle_migrations")).rows[0].count);
  } finally {
    await c.end();
  }
}
