// The inbound git push hook (platform spec 4.1 rule 8, 4.2): which projects a push is for,
// whose secret signed it, and the git_push deployments it starts. A delivery id is handled
// once per project (git_hook_deliveries); a redelivery gets the first outcome back. A push
// to a branch without an environment may make a development one (push-environments.ts).
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { open, seal } from "../../lib/master-key.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { CandidateRow, DeliveryKey, GitHooksRepo } from "./git-hooks.repo.ts";
import { repoMatches, verifyHook, type GitHost, type Push } from "./git-payload.ts";
import { refreshesOnPush } from "../environments/stage-builds.ts";
import type { StagingRefresh } from "./staging-refresh.ts";
import { LIMIT_TRIGGER, type DevelopmentSkip, type HookCreated, type HookStop, type PushEnvironments } from "./push-environments.ts";

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
  skipped: (HookSkip | DevelopmentSkip)[];
  created_environments: HookCreated[];
  stopped: HookStop[];
}

/** An outcome with nothing in it yet. */
export const emptyOutcome = (): HookOutcome => ({ deliveries: [], deployments: [], skipped: [], created_environments: [], stopped: [] });

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A narrowing LIKE pattern: the repository's last path segment. */
export function namePattern(push: Push): string | null {
  const any = push.repoUrls[0] ?? push.fullName;
  const last = any?.split("/").pop();
  return last ? `%${likeEscape(last)}%` : null;
}

/**
 * The projects a push is for, from the rows the LIKE pattern found: those whose repository
 * (own or an addon's) really is the pushed one and whose secret opens (`openSecret` null: it
 * does not). A project found both ways counts as its own repository.
 */
export function pickCandidates(own: CandidateRow[], viaAddons: CandidateRow[], push: Push, openSecret: (sealed: string) => string | null): Candidate[] {
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
}

/** `created`: the environment was made by this push (push-environments.ts); `refresh`: it is refreshed from production first (staging-refresh.ts). */
type Target = { reason: "branch" | "addon"; addon: string | null; created?: boolean; refresh?: boolean };

/** Environments to deploy, by id: auto-deploy ones on the pushed branch, then those with an addon repository on it. */
export function targetsOf(branchEnvironments: { id: string; refresh?: boolean }[], addons: { environmentId: string; name: string }[]): Map<string, Target> {
  const targets = new Map<string, Target>();
  for (const e of branchEnvironments) targets.set(e.id, { reason: "branch", addon: null, ...(e.refresh ? { refresh: true } : {}) });
  for (const a of addons) {
    if (!targets.has(a.environmentId)) targets.set(a.environmentId, { reason: "addon", addon: a.name });
  }
  return targets;
}

/** Why a deployment a push asked for was skipped; null when the error is no reason to skip (the push fails). */
export function skipReason(err: unknown): HookSkip["reason"] | null {
  if (!(err instanceof DomainError)) return null;
  // Busy (a task already queued or running) or gone: skipped and said so.
  // A staging refresh whose production is busy (across servers it must be backed up first) waits for the next push too.
  if (err.code === "task_in_progress" || err.code === "deployment_in_progress" || err.code === "copy_source_busy") return "deployment_in_progress";
  return err.code === "not_found" ? "not_found" : null;
}

export function createGitHooks(deps: {
  repo: GitHooksRepo;
  clock: Clock;
  masterKey: Buffer;
  deployments: Pick<DeploymentsService, "requestOperation">;
  pushEnvironments: Pick<PushEnvironments, "forPush">;
  stagingRefresh: Pick<StagingRefresh, "start">;
}) {
  const { repo } = deps;

  function openSecret(sealed: string): string | null {
    try {
      return open(deps.masterKey, sealed);
    } catch {
      return null; // sealed with another master key: no hook can verify against it
    }
  }

  /** The deployments a push starts in one project. */
  async function targetsFor(c: Candidate, push: Push & { branch: string }): Promise<Map<string, Target>> {
    const branchEnvironments = c.ownRepo ? await repo.autoDeployEnvironments(c.projectId, push.branch) : [];
    const addons = (await repo.autoDeployAddons(c.projectId, push.branch)).filter((r) => repoMatches(r.addon.gitUrl, push));
    return targetsOf(
      branchEnvironments.map((e) => ({ id: e.id, refresh: refreshesOnPush(e) })),
      addons.map((a) => ({ environmentId: a.environmentId, name: a.addon.name })),
    );
  }

  /** Starts one git_push deployment per target; busy environments are recorded as skipped. */
  async function deployTargets(
    c: Candidate,
    host: GitHost,
    deliveryId: string,
    push: Push & { branch: string },
    targets: Map<string, Target>,
    outcome: HookOutcome,
    started: string[],
  ): Promise<void> {
    for (const [environmentId, why] of targets) {
      const gitPush = {
        host,
        delivery_id: deliveryId,
        repository: push.repoUrls[0] ?? push.fullName,
        branch: push.branch,
        commit: push.commit,
        ...(why.addon ? { addon: why.addon } : {}),
        ...(why.created ? { created_environment: true } : {}),
      };
      try {
        const scope = { organizationId: c.organizationId, projectId: c.projectId };
        // A staging environment set to refresh on push: a copy from production first, the deploy after it.
        const refresh = why.refresh ? await deps.stagingRefresh.start(scope, environmentId, push, gitPush) : null;
        const row =
          refresh ??
          (await deps.deployments.requestOperation(scope, environmentId, "deploy", { userId: null, apiKeyId: null }, {
            trigger: "git_push",
            // A push to an addon repository redeploys the environment's own branch; the addon commit is in extra_data.
            git: why.reason === "branch" ? { branch: push.branch, commit: push.commit, message: push.message } : {},
            extraData: { git_push: gitPush },
            busyMessage: "A deployment is already in progress on this environment",
          }));
        started.push(row.id);
        outcome.deployments.push({ project_id: c.projectId, environment_id: environmentId, deployment_id: row.id, reason: why.reason, addon: why.addon });
      } catch (err) {
        const reason = skipReason(err);
        if (!reason) throw err;
        outcome.skipped.push({ project_id: c.projectId, environment_id: environmentId, reason, message: (err as DomainError).message });
      }
    }
  }

  /** A development environment for a branch without one: made and deployed like the push's others; the stops it took recorded. */
  async function developmentFor(c: Candidate, host: GitHost, deliveryId: string, push: Push & { branch: string }, outcome: HookOutcome, started: string[]): Promise<void> {
    // Deployed before the project's development lock is let go: a push of another new branch at once counts it.
    const created = new Map<string, Target>();
    const dev = await deps.pushEnvironments.forPush(c, push.branch, async (environmentId) => {
      created.set(environmentId, { reason: "branch", addon: null, created: true });
      await deployTargets(c, host, deliveryId, push, created, outcome, started);
    });
    for (const s of dev.stopped) started.push(s.deployment_id);
    outcome.stopped.push(...dev.stopped);
    if (dev.skipped) outcome.skipped.push(dev.skipped);
    if (dev.created) outcome.created_environments.push(dev.created);
  }

  /** A delivery this project has had before: the first outcome's deployments again. */
  async function replay(key: DeliveryKey, outcome: HookOutcome): Promise<void> {
    const first = await repo.claimed(key);
    outcome.deliveries.push({ project_id: key.projectId, duplicate: true, received_at: (first?.receivedAt ?? new Date()).toISOString() });
    const ids = first?.deploymentIds ?? [];
    if (ids.length === 0) return;
    for (const r of await repo.deploymentsByIds(ids)) {
      if (r.trigger === LIMIT_TRIGGER) {
        outcome.stopped.push({ project_id: key.projectId, environment_id: r.env, deployment_id: r.id, reason: LIMIT_TRIGGER });
        continue;
      }
      const gitPush = (r.extra as { git_push?: { addon?: string; created_environment?: boolean } }).git_push;
      const addon = gitPush?.addon ?? null;
      outcome.deployments.push({ project_id: key.projectId, environment_id: r.env, deployment_id: r.id, reason: addon ? "addon" : "branch", addon });
      if (gitPush?.created_environment) outcome.created_environments.push({ project_id: key.projectId, environment_id: r.env, name: r.name });
    }
  }

  /** One verified project of a push: claims the delivery for it, or replays the first outcome. */
  async function handleProject(host: GitHost, deliveryId: string, push: Push & { branch: string }, c: Candidate, outcome: HookOutcome): Promise<void> {
    const key: DeliveryKey = { host, deliveryId, projectId: c.projectId };
    const claimed = await repo.claim(key);
    if (!claimed) {
      await replay(key, outcome);
      return;
    }
    outcome.deliveries.push({ project_id: c.projectId, duplicate: false, received_at: claimed.receivedAt.toISOString() });
    const started: string[] = [];
    try {
      const targets = await targetsFor(c, push);
      if (c.ownRepo) await developmentFor(c, host, deliveryId, push, outcome, started);
      await deployTargets(c, host, deliveryId, push, targets, outcome, started);
    } catch (err) {
      // Unexpected (e.g. the database went away): a redelivery may try again, except what already started.
      if (started.length === 0) await repo.release(key).catch(() => {});
      else await repo.recordDeployments(key, started).catch(() => {});
      throw err;
    }
    if (started.length > 0) await repo.recordDeployments(key, started);
  }

  return {
    /** A new secret for a project's hook (the old one stops working); returned once, stored sealed. */
    async rotateSecret(projectId: string): Promise<string> {
      const secret = `bgh_${randomBytes(32).toString("base64url")}`;
      if (!(await repo.setSecret(projectId, seal(deps.masterKey, secret), deps.clock.now()))) throw notFound("Project");
      return secret;
    },

    /** Projects with a hook secret whose repository, or an active addon repository, is the pushed one. */
    async candidates(push: Push): Promise<Candidate[]> {
      const pattern = namePattern(push);
      if (!pattern) return [];
      const own = await repo.projectsWithRepoLike(pattern);
      const viaAddons = await repo.projectsWithAddonRepoLike(pattern);
      return pickCandidates(own, viaAddons, push, openSecret);
    },

    /** The candidates whose secret verifies the request. */
    verified(candidates: Candidate[], host: GitHost, headers: Record<string, string | string[] | undefined>, raw: Buffer): Candidate[] {
      return candidates.filter((c) => verifyHook(host, headers, raw, c.secret));
    },

    /** Starts the deployments of one verified push, once per (host, delivery id, project). */
    async handle(host: GitHost, deliveryId: string, push: Push & { branch: string }, verified: Candidate[]): Promise<HookOutcome> {
      const outcome = emptyOutcome();
      for (const c of verified) await handleProject(host, deliveryId, push, c, outcome);
      return outcome;
    },
  };
}
export type GitHooks = ReturnType<typeof createGitHooks>;
