// restart, start and stop: act on the environment's ERP container, found by its labels.
// Start and restart bring PostgreSQL up first (the ERP would otherwise look its name up
// while it is off the network, and Docker would ask the host's resolver). Stop keeps all
// data: containers, volume and files stay.
import type { CommandHandler, JsonObject } from "../runner/handler-types.ts";
import { checkHealth } from "../environment/health-check.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf, requireErpContainer, type ErpContainerRef } from "../environment/erp-container.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import { runningPostgres } from "../environment/postgres.ts";
import { runSteps } from "../runner/step-runner.ts";

type LifecycleKind = "restart" | "start" | "stop";

export function createLifecycleHandler(deps: ExecutorDeps, kind: LifecycleKind): CommandHandler<LifecycleKind> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, kind, async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      let erp: ErpContainerRef | null = null;
      let hostPort: number | null = null;
      let healthy: boolean | null = null;
      const need = () => {
        if (erp === null) throw new Error("the ERP container was not looked up");
        return erp;
      };

      /** The proxy's page for the environment follows its state; a proxy that fails is a warning, the ERP's state is what was asked. */
      const proxyMode = async (mode: "serving" | "maintenance", step: Parameters<typeof runningPostgres>[2]) => {
        const log = (level: "info" | "warning", message: string) => step.log(level, message);
        try {
          if (!(await deps.proxy.setMode(docker, params.environment_id, mode, log))) return;
          step.log("info", mode === "maintenance" ? "The proxy shows a maintenance page at the environment's address" : "The proxy routes the environment's address to the ERP again");
          await deps.proxy.report(docker, { force: true });
        } catch (error) {
          step.log("warning", `The proxy was not updated: ${error instanceof Error ? error.message : String(error)}`);
        }
      };

      const bringUp = async (step: Parameters<typeof runningPostgres>[2]) => {
        const container = need();
        await runningPostgres(docker, layout, step, { readyTimeoutMs: timing.dbReadyTimeoutMs, clock: deps.clock });
        if (kind === "restart") {
          await docker.restartContainer(container.id, timing.stopGraceSeconds);
          step.log("info", `Restarted ERP container ${container.name}`);
        } else if (container.state === "running") {
          step.log("info", `ERP container ${container.name} is already running`);
        } else {
          await docker.startContainer(container.id);
          step.log("info", `Started ERP container ${container.name}`);
        }
        // Docker chooses a new host port on every start.
        hostPort = await hostPortOf(docker, container.id);
        await proxyMode("serving", step);
        return `ERP container ${container.name} running; port 8069 on 127.0.0.1:${hostPort ?? "?"}`;
      };

      await runSteps(
        kind,
        ctx,
        {
          initializing: async (step) => {
            erp = await requireErpContainer(docker, layout);
            step.log("info", `${verb(kind)} ERP container ${erp.name} (now ${erp.state})`);
            return `Found ${erp.name}`;
          },
          connecting: async () => {
            const version = await docker.version();
            return `Docker ${version.version} reachable`;
          },
          starting_container: bringUp,
          health_check: async (step) => {
            healthy = await checkHealth(docker, need().id, hostPort, step, deps.clock, timing);
            return healthy ? "ERP healthy" : "ERP not healthy (non-fatal)";
          },
          completed: async (step) => {
            if (kind === "stop") {
              const container = need();
              // The page first: visitors see it rather than the proxy's error while the ERP shuts down.
              await proxyMode("maintenance", step);
              if (container.state === "running" || container.state === "restarting") {
                try {
                  await docker.stopContainer(container.id, timing.stopGraceSeconds);
                } catch (error) {
                  await proxyMode("serving", step);
                  throw error;
                }
                step.log("info", `Stopped ERP container ${container.name}; database and files are kept`);
              } else {
                step.log("info", `ERP container ${container.name} was not running (${container.state})`);
              }
            }
            return "Done";
          },
        },
        timing.steps.lifecycle,
      );

      const container = need();
      const details = await docker.inspectContainer(container.id);
      const result: JsonObject = {
        container_id: container.id,
        container_name: container.name,
        state: details?.state ?? "removed",
        host_port: kind === "stop" ? null : hostPort,
      };
      if (healthy !== null) result.healthy = healthy;
      return result;
    });
}

function verb(kind: LifecycleKind): string {
  return kind === "restart" ? "Restarting" : kind === "start" ? "Starting" : "Stopping";
}
