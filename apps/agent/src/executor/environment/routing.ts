// What deploy and route share about an environment's names in the server's proxy: which
// names, whether each points here (with the records to create when not), dropping the
// route, and waiting for the certificates of the names that may have one.
import type { DockerClient } from "../../docker/docker-client.ts";
import { mayCertify, recordsToCreate, type DnsAnswer } from "../../proxy/dns-check.ts";
import type { ReverseProxy } from "../../proxy/reverse-proxy.ts";
import type { JsonObject } from "../runner/handler-types.ts";

export type RoutingLog = (level: "info" | "warning", message: string, data?: JsonObject) => void;

/** The domain first, then the aliases that are not the domain; none without a domain. */
export function routedNames(domain: string | null, aliases: readonly string[] | undefined): string[] {
  return domain === null ? [] : [domain, ...(aliases ?? []).filter((a) => a !== domain)];
}

/** Each name's DNS answer, logged; `elsewhere` counts the names that do not point here. */
export async function checkNames(proxy: ReverseProxy, names: string[], log: RoutingLog): Promise<{ dns: Record<string, DnsAnswer>; elsewhere: number }> {
  const dns: Record<string, DnsAnswer> = {};
  let elsewhere = 0;
  for (const name of names) {
    const answer = await proxy.dns.check(name);
    dns[name] = answer;
    if (answer.status === "ok") log("info", `${name} resolves to ${answer.resolved.join(", ")}: this server`);
    else if (answer.status === "unchecked") {
      log("info", `${name} resolves to ${answer.resolved.join(", ")}; this server's public address is unknown, so the certificate is requested anyway`);
    } else {
      elsewhere += 1;
      const found = answer.status === "unresolved" ? "has no DNS record" : `resolves to ${answer.resolved.join(", ")}, not to this server`;
      log("warning", `${name} ${found}: create ${recordsToCreate(name, answer.expected)}. No certificate is requested for it until it points here; Berth checks again every few minutes`, {
        name,
        resolved: answer.resolved,
        expected: answer.expected,
      });
    }
  }
  return { dns, elsewhere };
}

/** Drops the environment's route (a domain removed); false when it had none. */
export async function unroute(proxy: ReverseProxy, docker: DockerClient, environmentId: string, log: RoutingLog): Promise<boolean> {
  const removed = await proxy.remove(docker, environmentId, log);
  if (removed) await proxy.report(docker, { force: true });
  log("info", removed ? "No domain any more: the environment's route was removed" : "No domain: not routed");
  return removed;
}

/** Waits for the certificates of the names that resolve here, logs each, reports the proxy; how many are valid. */
export async function awaitCertificates(
  proxy: ReverseProxy,
  docker: DockerClient,
  names: string[],
  dns: Record<string, DnsAnswer>,
  log: RoutingLog,
  signal: AbortSignal,
): Promise<number> {
  const certify = names.filter((n) => mayCertify(dns[n] ?? { status: "unchecked" }));
  const statuses = await proxy.awaitCertificates(docker, certify, proxy.host.certificateWaitMs, signal);
  for (const [name, cert] of statuses) {
    if (cert.status === "valid") log("info", `Certificate for ${name} valid until ${cert.not_after} (${cert.issuer})`);
    else if (cert.status === "error") log("warning", `No certificate for ${name} yet: ${cert.error}; the proxy keeps trying`);
    else log("info", `The certificate for ${name} is being requested; the proxy serves it as soon as the CA issues it`);
  }
  await proxy.report(docker, { force: true });
  return [...statuses.values()].filter((c) => c.status === "valid").length;
}
