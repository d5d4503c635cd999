// route: an environment's names changed through an API; its route in the server's proxy is
// replaced now rather than at its next deploy. Nothing else of the environment is touched:
// an environment not deployed here is left to its first deploy, a stopped one keeps its
// maintenance page under the new names.
import { readFile } from "node:fs/promises";
import { awaitCertificates, checkNames, routedNames, unroute, type RoutingLog } from "../environment/routing.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { findErpContainer } from "../environment/erp-container.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import type { CommandHandler } from "../runner/handler-types.ts";

export function createRouteHandler(deps: ExecutorDeps): CommandHandler<"route"> {
  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "route", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const log: RoutingLog = (level, message, data) => ctx.emit.log(level, message, data === undefined ? {} : { data });
      const erp = await findErpContainer(docker, layout);
      if (erp === null) {
        log("info", "The environment is not deployed on this server: its first deploy routes its names");
        return { routed: false, urls: [] };
      }
      const names = routedNames(params.domain, params.aliases);
      if (names.length === 0) {
        await unroute(deps.proxy, docker, layout.environmentId, log);
        return { routed: false, urls: [] };
      }
      const { dns } = await checkNames(deps.proxy, names, log);
      const mode = erp.state === "running" ? "serving" : "maintenance";
      await deps.proxy.route(
        docker,
        { environmentId: layout.environmentId, names, upstream: layout.erpContainer, network: layout.network, gevent: (await workersOf(layout.configFile)) > 0, dns, mode },
        params.proxy,
        log,
      );
      log("info", `Routing ${names.map((n) => `https://${n}`).join(", ")}${mode === "maintenance" ? " (stopped: maintenance page)" : ""}`);
      await awaitCertificates(deps.proxy, docker, names, dns, log, ctx.signal);
      return { routed: true, urls: names.map((n) => `https://${n}`) };
    });
}

/** The ERP's workers as its last deploy configured them (odoo.conf); 0 when unknown. */
async function workersOf(configFile: string): Promise<number> {
  const conf = await readFile(configFile, "utf8").catch(() => "");
  const match = /^workers\s*=\s*(\d+)\s*$/m.exec(conf);
  return match ? Number(match[1]) : 0;
}
