// Steps configuring_dns, verifying_dns and configuring_traefik: the names routed to the ERP,
// what DNS says of them, and the reverse proxy's route and certificates.
import { recordsToCreate, type DnsAnswer } from "../../../proxy/dns-check.ts";
import { awaitCertificates, checkNames, unroute } from "../../environment/routing.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import type { DeployContext } from "../deploy-context.ts";

/** configuring_dns: what the names must point at. */
export async function configureDns({ deps, names }: DeployContext, step: StepScope): Promise<{ summary: string }> {
  if (names.length === 0) {
    step.log("info", "No domain: nothing to point at this server");
    return { summary: "No domain" };
  }
  const expected = deps.proxy.publicAddresses();
  if (expected.length === 0) {
    step.log("warning", `This server's public address is not known (set BERTH_PUBLIC_ADDRESSES on the agent): point ${names.join(", ")} at it`);
    return { summary: "Public address unknown" };
  }
  step.log("info", `Point ${names.join(", ")} at this server: ${names.map((n) => recordsToCreate(n, expected)).join("; ")}`, {
    names,
    public_addresses: expected,
  });
  return { summary: `${names.length === 1 ? names[0] : `${names.length} names`} must point to ${expected.join(", ")}` };
}

/** verifying_dns: each routed name's answer. */
export async function verifyDns({ deps, names }: DeployContext, step: StepScope): Promise<{ summary: string; dns: Record<string, DnsAnswer> }> {
  if (names.length === 0) {
    step.log("info", "No domain: nothing to verify");
    return { summary: "No domain", dns: {} };
  }
  const checked = await checkNames(deps.proxy, names, (level, message, data) => step.log(level, message, data));
  const elsewhere = checked.elsewhere;
  return { summary: elsewhere === 0 ? "DNS points here" : `${elsewhere} of ${names.length} name(s) do not point here (warning)`, dns: checked.dns };
}

/** configuring_traefik: the route to the ERP (gevent: /websocket and /longpolling to 8072), or none without a domain. */
export async function configureRouting(
  { deps, docker, layout, params, names }: DeployContext,
  input: { gevent: boolean; dns: Record<string, DnsAnswer> },
  step: StepScope,
): Promise<{ summary: string }> {
  const log = (level: "info" | "warning", message: string) => step.log(level, message);
  if (names.length === 0) return { summary: (await unroute(deps.proxy, docker, layout.environmentId, log)) ? "Route removed" : "Skipped: no domain" };
  const { gevent, dns } = input;
  await deps.proxy.route(docker, { environmentId: layout.environmentId, names, upstream: layout.erpContainer, network: layout.network, gevent, dns }, params.proxy, log);
  step.log("info", `Routing ${names.map((n) => `https://${n}`).join(", ")} to ${layout.erpContainer}:8069${gevent ? " (/websocket and /longpolling to 8072)" : ""}`);
  const valid = await awaitCertificates(deps.proxy, docker, names, dns, (level, message) => step.log(level, message), step.signal);
  return { summary: `Routing ${names[0]}; ${valid} of ${names.length} certificate(s) valid` };
}
