// Turns an operation row into a signed command for the agent of its server. Called right
// after the row is written (fast path) and by the maintenance sweep (repair path, e.g.
// after a crash between the two); the unique deployment_id on the outbox makes a second
// dispatch of the same row a no-op. Each command family has its parameter builder
// (deploy-params.ts, data-params.ts, lifecycle-params.ts), typed as the protocol's
// CommandParams<T> all the way to agent-commands' issue. A command that cannot be built
// fails its operation with the reason (dispatch-error.ts); the next one is still sent.
import { isUniqueViolation } from "../../../lib/errors.ts";
import type { Clock } from "../../../lib/clock.ts";
import type { AgentCommands, TypedCommand } from "../../agents/agent-commands.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";
import type { DispatchRepo } from "./dispatch.repo.ts";
import { dispatchFailure, dispatchFailureMessage } from "./dispatch-error.ts";
import { createDeployParams, type DeployParamsDeps } from "./deploy-params.ts";
import { createDataParams, type DataParamsDeps } from "./data-params.ts";
import { destroyParams, lifecycleParams, routeParams, type RoutedEnvironment } from "./lifecycle-params.ts";

/** How long a task may wait for an offline server before it fails (platform spec 8: 1800 s). */
export const DISPATCH_TTL_MS = 30 * 60 * 1000;

/** A command's type and parameters, before the outbox adds who, where and until when. */
type Built = TypedCommand;

export function createDispatcher(
  deps: DeployParamsDeps &
    DataParamsDeps & {
      repo: DispatchRepo;
      commands: Pick<AgentCommands, "issue">;
      clock: Clock;
    },
) {
  const deployParams = createDeployParams(deps);
  const data = createDataParams(deps);

  /** The command of an operation kind (rollback redeploys its target), or null for a kind no command runs. */
  async function build(d: DeploymentRow): Promise<Built | null> {
    switch (d.kind) {
      case "deploy":
        return { type: "deploy", params: await deployParams(d) };
      case "redeploy":
      case "rollback":
        return { type: "redeploy", params: await deployParams(d) };
      case "restart":
      case "start":
      case "stop":
        return { type: d.kind, params: lifecycleParams(d) };
      case "destroy":
        return { type: "destroy", params: destroyParams(d) };
      case "backup":
        return { type: "backup", params: await data.backup(d) };
      case "restore":
        return { type: "restore", params: await data.restore(d) };
      case "copy": {
        // Null while it waits for the source's backup (operation-chains.ts dispatches it then).
        const params = await data.copy(d);
        return params ? { type: "restore", params } : null;
      }
      default:
        return null;
    }
  }

  async function dispatch(d: DeploymentRow, issuedBy: string): Promise<void> {
    if (!d.serverId) return;
    let command: Built | null;
    try {
      command = await build(d);
    } catch (err) {
      // Nothing to send, ever: the operation fails now rather than wait out its expiry.
      const failure = dispatchFailure(err);
      await deps.repo.failUnbuilt(d, deps.clock.now(), dispatchFailureMessage(failure), failure.code);
      return;
    }
    if (!command) return;
    try {
      await deps.commands.issue({ ...command, organizationId: d.organizationId, serverId: d.serverId, issuedBy, deploymentId: d.id, ttlMs: DISPATCH_TTL_MS });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
  }

  return {
    dispatch,
    /**
     * An environment's names changed: its server's proxy takes them now (a signed `route`
     * command) instead of at the next deploy. Nothing is sent for an environment never
     * deployed (its first deploy routes it) or without a server; the agent leaves one that
     * is not deployed on its server alone.
     */
    async routeUpdate(env: RoutedEnvironment & { organizationId: string; serverId: string | null; status: string; isActive: boolean }): Promise<void> {
      if (env.serverId === null || !env.isActive || env.status === "pending") return;
      await deps.commands.issue({
        organizationId: env.organizationId,
        serverId: env.serverId,
        type: "route",
        params: routeParams(env, deps.addresses, deps.proxy),
        issuedBy: "system:domains",
        ttlMs: DISPATCH_TTL_MS,
      });
    },
    /**
     * Waiting operations that have no command yet (a crash between write and dispatch),
     * oldest first. One that cannot be sent now (the database, say) does not hold up the
     * others; the first such error is thrown once all were tried, and the next sweep retries.
     */
    async dispatchPending(): Promise<number> {
      const rows = await deps.repo.waitingWithoutCommand(500);
      let firstError: unknown = null;
      for (const d of rows) {
        const by = d.triggeredBy ? `user:${d.triggeredBy}` : d.apiKeyId ? `api_key:${d.apiKeyId}` : "system:dispatcher";
        await dispatch(d, by).catch((err: unknown) => {
          firstError ??= err;
        });
      }
      if (firstError !== null) throw firstError;
      return rows.length;
    },
    /**
     * Fails operations whose command expired before the agent took it (server offline),
     * or that the agent refused. The environment is left as it was: nothing ran.
     */
    async failUndelivered(now: Date): Promise<number> {
      return (await deps.repo.failUndelivered(now, DISPATCH_TTL_MS / 60000)).length;
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
