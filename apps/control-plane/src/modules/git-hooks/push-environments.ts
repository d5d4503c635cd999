// Development environments made by pushes (issue 34, "Stages"): a push of a project's own
// repository to a branch that has no environment in the project creates a development
// environment on the project's development server (off by default), within the project's
// development_limit: the oldest idle development environment is stopped for it, never destroyed.
import { DomainError } from "../../lib/errors.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentsService } from "../environments/environments.service.ts";
import type { PushEnvironmentsRepo, RunningDevelopment } from "./push-environments.repo.ts";

/** The trigger of the stop operations the limit starts, named in the hook's outcome too. */
export const LIMIT_TRIGGER = "development_limit";
/** An environment name's longest (environments.routes.ts CreateEnvironment). */
const NAME_MAX = 255;

export interface HookCreated {
  project_id: string;
  environment_id: string;
  name: string;
}
export interface HookStop {
  project_id: string;
  environment_id: string;
  deployment_id: string;
  reason: typeof LIMIT_TRIGGER;
}
/** A development environment the push would have made and did not; no environment id (there is none). */
export interface DevelopmentSkip {
  project_id: string;
  environment_id: null;
  reason: typeof LIMIT_TRIGGER | "environment_not_created";
  message: string;
}
export interface DevelopmentOutcome {
  /** The environment made, to be deployed like the others of the push. */
  created: HookCreated | null;
  stopped: HookStop[];
  skipped: DevelopmentSkip | null;
}

/**
 * The name of a branch's environment: the branch lowercased, each run of characters other
 * than letters, digits, dots and underscores one hyphen (feature/Invoice#12 → feature-invoice-12),
 * made unique among `taken` (case-insensitively, as the names' index is) with -2, -3, ….
 */
export function branchEnvironmentName(branch: string, taken: Iterable<string>): string {
  const used = new Set([...taken].map((n) => n.toLowerCase()));
  const base =
    branch
      .toLowerCase()
      .replace(/[^a-z0-9._]+/g, "-")
      .replace(/^[-.]+|[-.]+$/g, "")
      .slice(0, NAME_MAX - 4)
      .replace(/[-.]+$/, "") || "development";
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) {
    const name = `${base}-${n}`;
    if (!used.has(name)) return name;
  }
}

/**
 * What one more development environment needs under `limit`: how many of those running must
 * stop (`need`), and the idle ones (running, no operation) oldest first, least recently
 * deployed first (never deployed: first of all). One being stopped or destroyed already does
 * not count.
 */
export function stopCandidates(running: RunningDevelopment[], limit: number): { need: number; idle: string[] } {
  const counted = running.filter((r) => r.activeKind !== "stop" && r.activeKind !== "destroy");
  const idle = counted
    .filter((r) => r.status === "running" && r.activeKind === null)
    .sort((a, b) => (a.lastDeployedAt?.getTime() ?? -Infinity) - (b.lastDeployedAt?.getTime() ?? -Infinity) || a.createdAt.getTime() - b.createdAt.getTime())
    .map((r) => r.id);
  return { need: Math.max(0, counted.length + 1 - limit), idle };
}

/** A stop needs a running environment (as `berth stop` does: operations.service.ts). */
const MUST_RUN = { status: "running", code: "environment_not_running", message: "The environment is not running" } as const;

export function createPushEnvironments(deps: {
  repo: PushEnvironmentsRepo;
  environments: Pick<EnvironmentsService, "create">;
  deployments: Pick<DeploymentsService, "requestOperation">;
}) {
  const { repo } = deps;
  const none = (): DevelopmentOutcome => ({ created: null, stopped: [], skipped: null });

  /** Stops idle ones, oldest first, until `need` did; the stops started (a busy one is passed over). */
  async function makeRoom(project: { projectId: string; organizationId: string }, need: number, idle: string[]): Promise<HookStop[]> {
    const stopped: HookStop[] = [];
    for (const environmentId of idle) {
      if (stopped.length >= need) break;
      try {
        const row = await deps.deployments.requestOperation({ organizationId: project.organizationId, projectId: project.projectId }, environmentId, "stop", { userId: null, apiKeyId: null }, {
          trigger: LIMIT_TRIGGER,
          required: MUST_RUN,
        });
        stopped.push({ project_id: project.projectId, environment_id: environmentId, deployment_id: row.id, reason: LIMIT_TRIGGER });
      } catch (err) {
        // Busy or stopped since it was read: the next one.
        if (!(err instanceof DomainError)) throw err;
      }
    }
    return stopped;
  }

  return {
    /**
     * For a push of the project's own repository to `branch`: the development environment it
     * makes, the ones stopped for it, or why it made none. Nothing when the project has no
     * development server or the branch has an environment.
     */
    async forPush(project: { projectId: string; organizationId: string }, branch: string): Promise<DevelopmentOutcome> {
      const settings = await repo.settings(project.projectId);
      if (!settings?.server || (await repo.branchHasEnvironment(project.projectId, branch))) return none();
      const skip = (reason: DevelopmentSkip["reason"], message: string): DevelopmentOutcome => ({
        ...none(),
        skipped: { project_id: project.projectId, environment_id: null, reason, message },
      });
      if (!settings.server.live) return skip("environment_not_created", `The project's development server ${settings.server.id} was deleted; choose another (development_server_id)`);

      const { need, idle } = stopCandidates(await repo.runningDevelopment(project.projectId), settings.limit);
      if (idle.length < need) {
        return skip(LIMIT_TRIGGER, `The project runs its limit of ${settings.limit} development environments and none is idle to stop; no environment was created for ${branch}`);
      }
      const stopped = need > 0 ? await makeRoom(project, need, idle) : [];
      if (stopped.length < need) {
        return { ...skip(LIMIT_TRIGGER, `The project runs its limit of ${settings.limit} development environments and none could be stopped; no environment was created for ${branch}`), stopped };
      }

      const size = (await repo.productionSize(project.projectId)) ?? {};
      const scope = { organizationId: project.organizationId, projectId: null };
      // The name index is the arbiter between two pushes of one new branch at once: the loser
      // finds the branch taken and makes none.
      for (let attempt = 0; attempt < 3; attempt++) {
        const name = branchEnvironmentName(branch, await repo.activeNames(project.projectId));
        try {
          const env = await deps.environments.create(scope, {
            project_id: project.projectId,
            name,
            stage: "development",
            git_branch: branch,
            auto_deploy: true,
            server_id: settings.server.id,
            ...size,
          });
          return { created: { project_id: project.projectId, environment_id: env.id, name: env.name }, stopped, skipped: null };
        } catch (err) {
          if (!(err instanceof DomainError)) throw err;
          if (err.code === "environment_name_taken") {
            if (await repo.branchHasEnvironment(project.projectId, branch)) return { ...none(), stopped };
            continue;
          }
          return { ...skip("environment_not_created", err.message), stopped };
        }
      }
      return { ...skip("environment_not_created", `No free environment name for ${branch}`), stopped };
    },
  };
}
export type PushEnvironments = ReturnType<typeof createPushEnvironments>;
