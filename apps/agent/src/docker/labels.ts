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
