// What the per-version end-to-end file (test/e2e/erp-versions.e2e.test.ts) reaches besides
// the APIs: an add-on repository to push module versions to (served over HTTPS on
// 127.0.0.1, as a customer's Git host would serve it), an environment's ERP database and its
// published port, read from the Docker objects the agent made, and API keys taken in turn.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import type { App } from "@berth/control-plane";
import { publicClient } from "./http.ts";
import { sharedGitHttpsServer } from "../../apps/agent/src/executor/deploy/git-https-server.test-helpers.ts";

const exec = promisify(execFile);
const docker = new Docker();

export interface AddonRepo {
  /** https://127.0.0.1:<port>/…/addons.git (a test CA the agent trusts through GIT_SSL_CAINFO). */
  url: string;
  /** Commits these files (null deletes one) and pushes to main; the new head's id. */
  push(message: string, files: Record<string, string | null>): Promise<string>;
  remove(): Promise<void>;
}

/**
 * A bare repository with a working copy that pushes to it, served over HTTPS. Call before the
 * agent starts: the first call sets GIT_SSL_CAINFO, which the agent process inherits.
 */
export async function addonRepository(): Promise<AddonRepo> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "berth-erp-versions-git-"));
  const bare = path.join(dir, "addons.git");
  const work = path.join(dir, "work");
  const env = { ...process.env, GIT_AUTHOR_NAME: "Shop", GIT_AUTHOR_EMAIL: "dev@shop.test", GIT_COMMITTER_NAME: "Shop", GIT_COMMITTER_EMAIL: "dev@shop.test" };
  const git = async (args: string[], cwd = work) => (await exec("git", args, { cwd, env })).stdout.trim();
  await exec("git", ["init", "--quiet", "--bare", "--initial-branch=main", bare]);
  await mkdir(work);
  await git(["init", "--quiet", "--initial-branch=main"]);
  await git(["remote", "add", "origin", bare]);
  return {
    url: (await sharedGitHttpsServer()).url(bare),
    async push(message, files) {
      for (const [name, content] of Object.entries(files)) {
        if (content === null) await rm(path.join(work, name), { force: true });
        else {
          await mkdir(path.dirname(path.join(work, name)), { recursive: true });
          await writeFile(path.join(work, name), content);
        }
      }
      await git(["add", "--all"]);
      await git(["commit", "--quiet", "-m", message]);
      await git(["push", "--quiet", "origin", "main"]);
      return git(["rev-parse", "HEAD"]);
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The running container of the environment with this role (berth.role: db, erp), by the labels the agent gives them. */
async function containerOf(environmentId: string, role: "db" | "erp") {
  const [found] = await docker.listContainers({ filters: { label: [`berth.environment_id=${environmentId}`, `berth.role=${role}`] } });
  if (!found) throw new Error(`no running ${role} container of environment ${environmentId}`);
  return found;
}

/** One query in the environment's ERP database (psql in its db container), rows as text. Async: the control plane runs in this process. */
export async function erpSql(environmentId: string, query: string): Promise<string> {
  const db = await containerOf(environmentId, "db");
  const { stdout } = await exec("docker", ["exec", db.Id, "psql", "-U", "odoo", "-d", "odoo", "-tAX", "-c", query], { timeout: 30_000 });
  return stdout.trim();
}

/** The host port Docker published the environment's ERP (8069) on, 127.0.0.1. */
export async function erpPort(environmentId: string): Promise<number> {
  const erp = await containerOf(environmentId, "erp");
  const port = erp.Ports.find((p) => p.PrivatePort === 8069 && p.PublicPort);
  if (!port) throw new Error(`the ERP of environment ${environmentId} publishes no port`);
  return port.PublicPort;
}

/**
 * Public API clients of one organisation taken in turn: a full-access key may make 20
 * requests a minute and a read-only one 120 (public spec 8), and several flows poll at once.
 */
export function keyPool(app: App, organizationId: string, size = 10) {
  const pools = { full_access: [] as ReturnType<typeof publicClient>[], read_only: [] as ReturnType<typeof publicClient>[] };
  const turns = { full_access: 0, read_only: 0 };
  async function next(access: "full_access" | "read_only") {
    const pool = pools[access];
    if (pool.length < size) {
      const k = await app.services.apiKeys.create({ organizationId, projectId: null, access, name: `e2e ${access}`, createdBy: null });
      pool.push(publicClient(app, k.key));
    }
    return pool[turns[access]++ % pool.length]!;
  }
  return { write: () => next("full_access"), read: () => next("read_only") };
}
