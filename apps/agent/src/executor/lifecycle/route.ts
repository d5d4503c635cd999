// route: an environment's names changed through an API; its route in the server's proxy is
// replaced now rather than at its next deploy. Nothing else of the environment is touched:
// an environment not deployed here is left to its first deploy, a stopped one keeps its
// maintenance page under the new names.
import { readFile } from "node:fs/promises";
import { mayCertify, type DnsAnswer } from "../../proxy/dns-check.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { findErpContainer } from "../environment/erp-container.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import type { CommandHandler } from "../runner/handler-types.ts";

export function createRouteHandler(deps: ExecutorDeps): CommandHandler<"route"> {
  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "route", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const log = (level: "info" | "warning", message: string) => ctx.emit.log(level, message);
      const erp = await findErpContainer(docker, layout);
      if (erp === null) {
        log("info", "The environment is not deployed on this server: its first deploy routes its names");
        return { routed: false, urls: [] };
      }
      const names = params.domain === null ? [] : [params.domain, ...(params.aliases ?? []).filter((a) => a !== params.domain)];
      if (names.length === 0) {
        const removed = await deps.proxy.remove(docker, layout.environmentId, log);
        if (removed) await deps.proxy.report(docker, { force: true });
        log("info", removed ? "No domain any more: the environment's route was removed" : "No domain: not routed");
        return { routed: false, urls: [] };
      }
      const dns: Record<string, DnsAnswer> = {};
      for (const name of names) {
        dns[name] = await deps.proxy.dns.check(name);
        if (dns[name].status === "mismatch" || dns[name].status === "unresolved") {
          log("warning", `${name} does not point to this server (${dns[name].resolved.join(", ") || "no record"}): no certificate is requested for it until it does`);
        }
      }
      const mode = erp.state === "running" ? "serving" : "maintenance";
      await deps.proxy.route(
        docker,
        { environmentId: layout.environmentId, names, upstream: layout.erpContainer, network: layout.network, gevent: (await workersOf(layout.configFile)) > 0, dns, mode },
        params.proxy,
        log,
      );
      log("info", `Routing ${names.map((n) => `https://${n}`).join(", ")}${mode === "maintenance" ? " (stopped: maintenance page)" : ""}`);
      // As a deploy does: the report that follows says whether the new names got their certificates.
      const certify = names.filter((n) => mayCertify(dns[n]!));
      for (const [name, cert] of await deps.proxy.awaitCertificates(docker, certify, deps.proxy.host.certificateWaitMs, ctx.signal)) {
        if (cert.status === "valid") log("info", `Certificate for ${name} valid until ${cert.not_after}`);
        else if (cert.status === "error") log("warning", `No certificate for ${name} yet: ${cert.error}`);
      }
      await deps.proxy.report(docker, { force: true });
      return { routed: true, urls: names.map((n) => `https://${n}`) };
    });
}

/** The ERP's workers as its last deploy configured them (odoo.conf); 0 when unknown. */
async function workersOf(configFile: string): Promise<number> {
  const conf = await readFile(configFile, "utf8").catch(() => "");
  const match = /^workers\s*=\s*(\d+)\s*$/m.exec(conf);
  return match ? Number(match[1]) : 0;
}
