// The parameters of the commands that act on what runs (restart, start, stop, destroy) and
// of route, which gives the server's proxy an environment's names without a deploy.
import type { CommandParams, ProxySettings } from "@berth/protocol";
import type { EnvironmentAddresses } from "../../environments/domains.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";

export type LifecycleKind = "restart" | "start" | "stop";

export function lifecycleParams(d: DeploymentRow): CommandParams<LifecycleKind> {
  return { deployment_id: d.id, environment_id: d.environmentId };
}

/** With delete_data (extra_data.delete_data: true) the environment's files go too. */
export function destroyParams(d: DeploymentRow): CommandParams<"destroy"> {
  const extra = (d.extraData ?? {}) as { delete_data?: unknown };
  return { deployment_id: d.id, environment_id: d.environmentId, delete_data: extra.delete_data === true };
}

/** An environment whose names a route command carries. */
export interface RoutedEnvironment {
  id: string;
  name: string;
  domain: string | null;
  aliases: string[];
}

export function routeParams(env: RoutedEnvironment, addresses: Pick<EnvironmentAddresses, "hostname">, proxy: ProxySettings | undefined): CommandParams<"route"> {
  return { environment_id: env.id, domain: addresses.hostname(env), aliases: env.aliases, ...(proxy ? { proxy } : {}) };
}
