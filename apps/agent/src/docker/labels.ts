// Ownership of Docker objects. THE RULE: Berth only ever changes or removes containers,
// networks, volumes and images that carry `berth.managed=true`; anything else on the host
// belongs to the customer and is at most read (counted in stats and diagnostics). Every
// mutating call filters or checks on this label before it acts.

export const MANAGED_LABEL = "berth.managed";
export const MANAGED_VALUE = "true";

/** Labels every object Berth creates carries. */
export const MANAGED_LABELS: Readonly<Record<string, string>> = { [MANAGED_LABEL]: MANAGED_VALUE };

/** The list filter that selects only Berth's objects. */
export const MANAGED_FILTER = { label: [`${MANAGED_LABEL}=${MANAGED_VALUE}`] };

export function isManaged(labels: Readonly<Record<string, string>> | null | undefined): boolean {
  return labels?.[MANAGED_LABEL] === MANAGED_VALUE;
}

/** Which environment an object belongs to; every per-environment object carries it. */
export const ENVIRONMENT_LABEL = "berth.environment_id";
/** What the object is for within its environment: erp, db, network, db-volume. */
export const ROLE_LABEL = "berth.role";

/**
 * "erp-run": a one-off container of the ERP image (initialisation, module upgrades).
 * "db-socket": the volume holding the database's unix socket; "db-loader": a one-off
 * container of the database's image that loads a dump through that socket, with no network.
 */
export type EnvironmentRole = "erp" | "erp-run" | "db" | "network" | "db-volume" | "db-socket" | "db-loader";

/** The labels of an environment's object: managed, its environment, its role, plus extras. */
export function environmentLabels(
  environmentId: string,
  role: EnvironmentRole,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return { ...extra, ...MANAGED_LABELS, [ENVIRONMENT_LABEL]: environmentId, [ROLE_LABEL]: role };
}

/** The list filter for an environment's objects: Berth's own AND this environment's (AND this role). */
export function environmentFilter(environmentId: string, role?: EnvironmentRole): { label: string[] } {
  const label = [...MANAGED_FILTER.label, `${ENVIRONMENT_LABEL}=${environmentId}`];
  if (role !== undefined) label.push(`${ROLE_LABEL}=${role}`);
  return { label };
}

/** True when the object is Berth's and belongs to this environment. */
export function isEnvironmentObject(
  labels: Readonly<Record<string, string>> | null | undefined,
  environmentId: string,
): boolean {
  return isManaged(labels) && labels?.[ENVIRONMENT_LABEL] === environmentId;
}

/** What a server-wide object (not an environment's) is for: the reverse proxy and its network and volume, the mail catcher's network. */
export type ServerRole = "proxy" | "proxy-network" | "proxy-data" | "mail-network";

export function serverObjectLabels(role: ServerRole, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { ...extra, ...MANAGED_LABELS, [ROLE_LABEL]: role };
}
