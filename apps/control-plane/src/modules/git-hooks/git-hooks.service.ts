// The inbound git push hook (platform spec 4.1 rule 8, 4.2): which projects a push is for,
// whose secret signed it, and the git_push deployments it starts. A delivery id is handled
// once per project (git_hook_deliveries); a redelivery gets the first outcome back.
import { randomBytes } from "node:crypto";
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { deployments, environmentAddons, environments, gitHookDeliveries, projects, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { open, seal } from "../../lib/master-key.ts";
import type { DeploymentsService } from "../deployments/deployments.service.ts";
import { repoMatches, verifyHook, type GitHost, type Push } from "./git-payload.ts";

export interface Candidate {
  projectId: string;
  organizationId: string;
  /** The project's own repository is the pushed one (else only addons of it are). */
  ownRepo: boolean;
  secret: string;
}

export interface HookDeployment {
  project_id: string;
  environment_id: string;
  deployment_id: string;
  reason: "branch" | "addon";
  addon: string | null;
}
export interface HookSkip {
  project_id: string;
  environment_id: string;
  reason: "deployment_in_progress" | "not_found";
  message: string;
}
export interface HookOutcome {
  deliveries: { project_id: string; duplicate: boolean; received_at: string }[];
  deployments: HookDeployment[];
  skipped: HookSkip[];
}

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createGitHooks(deps: { db: Database; clock: Clock; masterKey: Buffer; deployments: Pick<DeploymentsService, "requestOperation"> }) {
  const { db } = deps;

  /** A narrowing LIKE pattern: the repository's last path segment. */
  function namePattern(push: Push): string | null {
    const any = push.repoUrls[0] ?? push.fullName;
    const last = any?.split("/").pop();
    return last ? `%${likeEscape(last)}%` : null;
  }

  function openSecret(sealed: string): string | null {
    try {
      return open(deps.masterKey, sealed);
    } catch {
      return null; // sealed with another master key: no hook can verify against it
    }
  }

  async function addonsOf(projectId: string, push: Push, branch: string) {
    const rows = await db
      .select({ addon: environmentAddons, env: environments })
      .from(environmentAddons)
      .innerJoin(environments, eq(environments.id, environmentAddons.environmentId))
      .where(
        and(
          eq(environments.projectId, projectId),
          eq(environments.isActive, true),
          eq(environmentAddons.isActive, true),
          eq(environmentAddons.autoDeploy, true),
          eq(environmentAddons.branch, branch),
        ),
      );
    return rows.filter((r) => repoMatches(r.addon.gitUrl, push));
  }

  /** Starts one git_push deployment per target; busy environments are recorded as skipped. */
  async function deployTargets(
    c: Candidate,
    host: GitHost,
    deliveryId: string,
    push: Push & { branch: string },
    targets: Map<string, { reason: "branch" | "addon"; addon: string | null }>,
    outcome: HookOutcome,
    started: string[],
  ): Promise<void> {
    for (const [environmentId, why] of targets) {
      const gitPush = { host, delivery_id: deliveryId, repository: push.repoUrls[0] ?? push.fullName, branch: push.branch, commit: push.commit, ...(why.addon ? { addon: why.addon } : {}) };
      try {
        const row = await deps.deployments.requestOperation(
          { organizationId: c.organizationId, projectId: c.projectId },
          environmentId,
          "deploy",
          { userId: null, apiKeyId: null },
          {
            trigger: "git_push",
            // A push to an addon repository redeploys the environment's own branch; the addon commit is in extra_data.
            git: why.reason === "branch" ? { branch: push.branch, commit: push.commit, message: push.message } : {},
            extraData: { git_push: gitPush },
            busyMessage: "A deployment is already in progress on this environment",
          },
        );
        started.push(row.id);
        outcome.deployments.push({ project_id: c.projectId, environment_id: environmentId, deployment_id: row.id, reason: why.reason, addon: why.addon });
      } catch (err) {
        // Busy (a task already queued or running) or gone: skipped and said so; anything else fails the push.
        const busy = err instanceof DomainError && (err.code === "task_in_progress" || err.code === "deployment_in_progress");
        if (!busy && !(err instanceof DomainError && err.code === "not_found")) throw err;
        outcome.skipped.push({
          project_id: c.projectId,
          environment_id: environmentId,
          reason: busy ? "deployment_in_progress" : "not_found",
          message: err.message,
        });
      }
    }
  }

  return {
    /** A new secret for a project's hook (the old one stops working); returned once, stored sealed. */
    async rotateSecret(projectId: string): Promise<string> {
      const secret = `bgh_${randomBytes(32).toString("base64url")}`;
      const [row] = await db
        .update(projects)
        .set({ gitHookSecretEnc: seal(deps.masterKey, secret), updatedAt: deps.clock.now() })
        .where(and(eq(projects.id, projectId), isNull(projects.deletedAt)))
        .returning({ id: projects.id });
      if (!row) throw notFound("Project");
      return secret;
    },

    /** Projects with a hook secret whose repository, or an active addon repository, is the pushed one. */
    async candidates(push: Push): Promise<Candidate[]> {
      const pattern = namePattern(push);
      if (!pattern) return [];
      const own = await db
        .select({ id: projects.id, org: projects.organizationId, url: projects.gitRepoUrl, enc: projects.gitHookSecretEnc })
        .from(projects)
        .where(and(isNull(projects.deletedAt), sql`${projects.gitHookSecretEnc} is not null`, sql`lower(${projects.gitRepoUrl}) like ${pattern}`));
      const viaAddons = await db
        .selectDistinct({ id: projects.id, org: projects.organizationId, url: environmentAddons.gitUrl, enc: projects.gitHookSecretEnc })
        .from(environmentAddons)
        .innerJoin(environments, eq(environments.id, environmentAddons.environmentId))
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(
          and(
            isNull(projects.deletedAt),
            sql`${projects.gitHookSecretEnc} is not null`,
            eq(environmentAddons.isActive, true),
            sql`lower(${environmentAddons.gitUrl}) like ${pattern}`,
          ),
        );
      const out = new Map<string, Candidate>();
      for (const [rows, ownRepo] of [
        [own, true],
        [viaAddons, false],
      ] as const) {
        for (const r of rows) {
          if (!r.enc || !repoMatches(r.url, push)) continue;
          const prev = out.get(r.id);
          if (prev) {
            prev.ownRepo ||= ownRepo;
            continue;
          }
          const secret = openSecret(r.enc);
          if (secret) out.set(r.id, { projectId: r.id, organizationId: r.org, ownRepo, secret });
        }
      }
      return [...out.values()];
    },

    /** The candidates whose secret verifies the request. */
    verified(candidates: Candidate[], host: GitHost, headers: Record<string, string | string[] | undefined>, raw: Buffer): Candidate[] {
      return candidates.filter((c) => verifyHook(host, headers, raw, c.secret));
    },

    /** Starts the deployments of one verified push, once per (host, delivery id, project). */
    async handle(host: GitHost, deliveryId: string, push: Push & { branch: string }, verified: Candidate[]): Promise<HookOutcome> {
      const outcome: HookOutcome = { deliveries: [], deployments: [], skipped: [] };
      const claimOf = (c: Candidate) =>
        and(eq(gitHookDeliveries.gitHost, host), eq(gitHookDeliveries.deliveryId, deliveryId), eq(gitHookDeliveries.projectId, c.projectId));
      for (const c of verified) {
        const [claimed] = await db
          .insert(gitHookDeliveries)
          .values({ gitHost: host, deliveryId, projectId: c.projectId, deploymentIds: [] })
          .onConflictDoNothing()
          .returning();
        if (!claimed) {
          const [first] = await db.select().from(gitHookDeliveries).where(claimOf(c));
          outcome.deliveries.push({ project_id: c.projectId, duplicate: true, received_at: (first?.receivedAt ?? new Date()).toISOString() });
          const ids = first?.deploymentIds ?? [];
          if (ids.length > 0) {
            const rows = await db
              .select({ id: deployments.id, env: deployments.environmentId, extra: deployments.extraData })
              .from(deployments)
              .where(inArray(deployments.id, ids));
            for (const r of rows) {
              const addon = ((r.extra as { git_push?: { addon?: string } }).git_push?.addon ?? null) as string | null;
              outcome.deployments.push({ project_id: c.projectId, environment_id: r.env, deployment_id: r.id, reason: addon ? "addon" : "branch", addon });
            }
          }
          continue;
        }
        outcome.deliveries.push({ project_id: c.projectId, duplicate: false, received_at: claimed.receivedAt.toISOString() });

        // Environments to deploy: auto-deploy ones on the pushed branch, then those with an addon repository on it.
        const targets = new Map<string, { reason: "branch" | "addon"; addon: string | null }>();
        if (c.ownRepo) {
          const envs = await db
            .select({ id: environments.id })
            .from(environments)
            .where(and(eq(environments.projectId, c.projectId), eq(environments.isActive, true), eq(environments.autoDeploy, true), eq(environments.gitBranch, push.branch)))
            .orderBy(environments.createdAt);
          for (const e of envs) targets.set(e.id, { reason: "branch", addon: null });
        }
        for (const a of await addonsOf(c.projectId, push, push.branch)) {
          if (!targets.has(a.env.id)) targets.set(a.env.id, { reason: "addon", addon: a.addon.name });
        }

        const started: string[] = [];
        const claim = claimOf(c);
        try {
          await deployTargets(c, host, deliveryId, push, targets, outcome, started);
        } catch (err) {
          // Unexpected (e.g. the database went away): a redelivery may try again, except what already started.
          if (started.length === 0) await db.delete(gitHookDeliveries).where(claim).catch(() => {});
          else await db.update(gitHookDeliveries).set({ deploymentIds: started }).where(claim).catch(() => {});
          throw err;
        }
        if (started.length > 0) await db.update(gitHookDeliveries).set({ deploymentIds: started }).where(claim);
      }
      return outcome;
    },
  };
}
export type GitHooks = ReturnType<typeof createGitHooks>;
