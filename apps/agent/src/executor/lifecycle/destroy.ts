// destroy (platform spec 4.1 rule 5): removes the environment's containers, its database
// volume (always), its route in the reverse proxy, its network, odoo.conf and the database password;
// with delete_data also the data dir (file store) and the addons checkout. Objects are
// chosen by label only (berth.managed=true AND berth.environment_id=<id>), never by name,
// so nothing Berth did not create for this environment can be caught. Backups are kept.
import { rm, stat } from "node:fs/promises";
import { environmentFilter, isEnvironmentObject, ROLE_LABEL } from "../../docker/labels.ts";
import type { CommandHandler } from "../runner/handler-types.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import { runSteps } from "../runner/step-runner.ts";

// The ERP goes first: it would otherwise keep reconnecting to a database that is going away.
const REMOVAL_ORDER: Record<string, number> = { erp: 0, db: 1 };

export function createDestroyHandler(deps: ExecutorDeps): CommandHandler<"destroy"> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "destroy", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const removed = { containers: [] as string[], volumes: [] as string[], networks: [] as string[] };
      let deletedDatabase = false;
      let deletedData = false;

      await runSteps(
        "destroy",
        ctx,
        {
          initializing: async (step) => {
            step.log(
              "info",
              `Destroying environment ${params.environment_id}${params.delete_data ? ", data included" : "; data dir and addons are kept"}`,
            );
            return params.delete_data ? "Destroy with data" : "Destroy, keeping data";
          },
          connecting: async () => {
            const version = await docker.version();
            return `Docker ${version.version} reachable`;
          },
          completed: async (step) => {
            const filter = environmentFilter(layout.environmentId);
            const containers = (await docker.listContainers(filter))
              .filter((c) => isEnvironmentObject(c.labels, layout.environmentId))
              .sort((a, b) => (REMOVAL_ORDER[a.labels[ROLE_LABEL] ?? ""] ?? 2) - (REMOVAL_ORDER[b.labels[ROLE_LABEL] ?? ""] ?? 2));
            for (const container of containers) {
              await docker.removeContainer(container.id);
              removed.containers.push(container.name);
              step.log("info", `Removed container ${container.name}`);
            }
            for (const volume of await docker.listVolumes(filter)) {
              if (!isEnvironmentObject(volume.labels, layout.environmentId)) continue;
              await docker.removeVolume(volume.name);
              removed.volumes.push(volume.name);
              if (volume.labels[ROLE_LABEL] === "db-volume") deletedDatabase = true;
              step.log("info", `Removed volume ${volume.name}`);
            }
            // Before the network goes: the proxy is attached to it. Other environments' routes stay.
            const log = (level: "info" | "warning", message: string) => step.log(level, message);
            try {
              if (await deps.proxy.remove(docker, layout.environmentId, log)) {
                step.log("info", "Removed the environment's route from the proxy");
                await deps.proxy.report(docker, { force: true });
              }
            } catch (error) {
              step.log("warning", `The proxy could not drop the environment's route: ${error instanceof Error ? error.message : String(error)}`);
            }
            for (const network of await docker.listNetworks(filter)) {
              if (!isEnvironmentObject(network.labels, layout.environmentId)) continue;
              await docker.removeNetwork(network.id);
              removed.networks.push(network.name);
              step.log("info", `Removed network ${network.name}`);
            }
            for (const file of [layout.configFile, layout.dbPasswordFile]) {
              if (await exists(file)) step.log("info", `Removed ${file}`);
              await rm(file, { force: true });
            }
            if (params.delete_data) {
              // The whole environment folder: data dir, addons, and any half-made checkout.
              await rm(layout.dir, { recursive: true, force: true });
              deletedData = true;
              step.log("info", `Removed the data dir and addons (${layout.dir})`);
            } else {
              step.log("info", `Kept the data dir ${layout.dataDir} and addons ${layout.addonsDir}`);
            }
            return `Removed ${removed.containers.length} container(s), ${removed.volumes.length} volume(s), ${removed.networks.length} network(s)`;
          },
        },
        timing.steps.destroy,
      );

      return {
        deleted_containers: removed.containers.length > 0,
        deleted_database: deletedDatabase,
        deleted_data: deletedData,
        removed,
      };
    });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
