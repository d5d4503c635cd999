// Development environments made by pushes (issue 34, "Stages"): a push of a project's own
// repository to a branch that has no environment in the project creates a development
// environment on the project's development server (off by default), within the project's
// development_limit: the oldest idle development environment is stopped for it, never destroyed.
import { DomainError } from "../../lib/errors.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentsService } from "../environments/environments.service.ts";
import type { DevelopmentSettings, PushEnvironmentsRepo, RunningDevelopment } from "./push-environments.repo.ts";

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

/** The settings of a project whose pushes make development environments. */
type Settings = DevelopmentSettings & { server: NonNullable<DevelopmentSettings["server"]> };
type Project = { projectId: string; organizationId: string };

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
  async function makeRoom(project: Project, need: number, idle: string[]): Promise<HookStop[]> {
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

  /** Makes the branch's environment, making room for it first; under the project's development lock. */
  async function underLock(project: Project, branch: string, settings: Settings, deploy: (environmentId: string) => Promise<void>): Promise<DevelopmentOutcome> {
    if (await repo.branchHasEnvironment(project.projectId, branch)) return none();
    const skip = (reason: DevelopmentSkip["reason"], message: string): DevelopmentOutcome => ({
      ...none(),
      skipped: { project_id: project.projectId, environment_id: null, reason, message },
    });
    if (!settings.server.live) return skip("environment_not_created", `The project's development server ${settings.server.id} was deleted; choose another (development_server_id)`);

    const { need, idle } = stopCandidates(await repo.runningDevelopment(project.projectId), settings.limit);
    const full = `The project runs its limit of ${settings.limit} development environments`;
    if (idle.length < need) return skip(LIMIT_TRIGGER, `${full} and none is idle to stop; no environment was created for ${branch}`);
    const stopped = need > 0 ? await makeRoom(project, need, idle) : [];
    if (stopped.length < need) return { ...skip(LIMIT_TRIGGER, `${full} and none could be stopped; no environment was created for ${branch}`), stopped };

    const size = (await repo.productionSize(project.projectId)) ?? {};
    const scope = { organizationId: project.organizationId, projectId: null };
    // A name taken meanwhile (an environment made through the API): the next free one.
    for (let attempt = 0; attempt < 3; attempt++) {
      const name = branchEnvironmentName(branch, await repo.activeNames(project.projectId));
      let env: { id: string; name: string };
      try {
        env = await deps.environments.create(scope, {
          project_id: project.projectId,
          name,
          stage: "development",
          git_branch: branch,
          auto_deploy: true,
          server_id: settings.server.id,
          ...size,
        });
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        if (err.code === "environment_name_taken") continue;
        return { ...skip("environment_not_created", err.message), stopped };
      }
      await deploy(env.id);
      return { created: { project_id: project.projectId, environment_id: env.id, name: env.name }, stopped, skipped: null };
    }
    return { ...skip("environment_not_created", `No free environment name for ${branch}`), stopped };
  }

  return {
    /**
     * For a push of the project's own repository to `branch`: the development environment it
     * makes, the ones stopped for it, or why it made none. Nothing when the project has no
     * development server or the branch has an environment. `deploy` starts the new one's
     * deploy, still under the project's development lock, so a push of another new branch
     * at once finds it deploying and counts it.
     */
    async forPush(project: Project, branch: string, deploy: (environmentId: string) => Promise<void>): Promise<DevelopmentOutcome> {
      const settings = await repo.settings(project.projectId);
      if (!settings?.server) return none();
      return repo.serialised(project.projectId, () => underLock(project, branch, settings as Settings, deploy));
    },
  };
}
export type PushEnvironments = ReturnType<typeof createPushEnvironments>;
