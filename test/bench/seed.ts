// Seeds the organisations the benchmark reads, through the same services the product uses,
// and hands back who may read what: one target per API key.
import { createDb } from "@berth/db";
import { createDemoOrganization, createServices, systemClock } from "@berth/control-plane";
import { createApiKeysService } from "../../apps/control-plane/src/modules/api-keys/api-keys.service.ts";

export interface Target {
  /** The Authorization header value. */
  authorization: string;
  organizationId: string;
  /** A task of that organisation, for GET /deployments/{id}. */
  taskId: string;
}

export interface SeedOptions {
  organizations: number;
  projectsPerOrganization: number;
  /** Read-only, organisation-scoped keys per route (spread over the organisations). */
  keysPerRoute: number;
  /** The servers' master key: whatever seeding seals, they must be able to open. */
  masterKey: Buffer;
}

export interface Seeded {
  /** Disjoint key sets, so one route's run never eats into the other's rate windows. */
  projects: Target[];
  task: Target[];
  counts: { organizations: number; projects: number; tasks: number; keys: number };
}

/** Runs fn over items with at most `limit` in flight: seeding in parallel, without starving the pool. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export async function seed(url: string, opts: SeedOptions): Promise<Seeded> {
  const handle = createDb(url, { max: 8 });
  try {
    // The cursor secret only signs pagination cursors, which seeding never produces.
    const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: "bench-seed", masterKey: opts.masterKey });
    const actor = { userId: null, apiKeyId: null };

    const orgs = await mapLimit(Array.from({ length: opts.organizations }, (_, i) => i), 4, async (i) => {
      const demo = await createDemoOrganization(handle.db, services, { name: `Bench org ${i + 1}` });
      const scope = { organizationId: demo.organization_id, projectId: null };
      for (let p = 2; p <= opts.projectsPerOrganization; p++) {
        await services.projects.create(scope, {
          name: `Bench project ${p}`,
          server_id: demo.server_id,
          git_repo_url: `https://git.example.com/bench/project-${p}.git`,
          default_branch: "main",
          erp_version: "17.0",
        });
      }
      // One active task per environment is the most the product allows.
      const tasks = [
        (await services.deployments.requestAction(scope, demo.environments.running, "deploy", actor)).id,
        (await services.deployments.requestAction(scope, demo.environments.stopped, "deploy", actor)).id,
      ];
      return { id: demo.organization_id, orgReadOnlyKey: demo.api_keys.org_ro, tasks };
    });

    // Consecutive targets belong to different organisations, like real traffic from many customers.
    // The bench spreads its load over more keys per organisation than a customer may hold
    // (API_KEY_LIMIT), so that no key's rate budget runs out: its keys are made without that cap.
    const benchKeys = createApiKeysService({ apiKeys: services.repos.apiKeys, cursors: services.cursors, clock: systemClock, limit: Number.MAX_SAFE_INTEGER });
    const makeTargets = async (route: string): Promise<Target[]> =>
      mapLimit(Array.from({ length: opts.keysPerRoute }, (_, j) => j), 8, async (j) => {
        const org = orgs[j % orgs.length]!;
        const created = await benchKeys.create({
          organizationId: org.id,
          projectId: null,
          access: "read_only",
          name: `bench ${route} ${j}`,
          createdBy: null,
        });
        return { authorization: `Bearer ${created.key}`, organizationId: org.id, taskId: org.tasks[j % org.tasks.length]! };
      });
    const projects = await makeTargets("projects");
    const task = await makeTargets("task");

    // Fresh planner statistics, so neither variant runs on plans made for empty tables.
    await handle.pool.query("vacuum analyze");
    return {
      projects,
      task,
      counts: {
        organizations: orgs.length,
        projects: orgs.length * opts.projectsPerOrganization,
        tasks: orgs.length * 2,
        keys: orgs.length * 4 + projects.length + task.length,
      },
    };
  } finally {
    await handle.close();
  }
}
