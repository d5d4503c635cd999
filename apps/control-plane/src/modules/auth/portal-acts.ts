// Which organisations a portal administrator's request acted in. Their rights reach every
// organisation through the ordinary platform routes; each time access.ts grants one of them
// something in an organisation, that organisation is noted here for the request, and the
// support module's hook (support/portal-audit.ts) writes the request to its audit log.
import { AsyncLocalStorage } from "node:async_hooks";

const acts = new AsyncLocalStorage<Set<string>>();

/** Runs fn (the rest of a request) noting the organisations acted in into `organizations`. */
export function withPortalActs(organizations: Set<string>, fn: () => void): void {
  acts.run(organizations, fn);
}

/** A portal administrator was let act in this organisation during the current request. */
export function notePortalAct(organizationId: string): void {
  acts.getStore()?.add(organizationId);
}
