// The fuzzer's two tenants: A (whose keys and people send every request) and B (whose ids the
// requests borrow). Each is a demo organisation plus a second project, a webhook, API keys of
// every kind (several of each, so rate limits are spread) and a signed-in person of every role.
import { randomUUID } from "node:crypto";
import { createDemoOrganization } from "@berth/control-plane";
import { addPerson, type PersonRole } from "../support/people.ts";
import type { FuzzTarget } from "./start.ts";

export const KEY_KINDS = ["org_rw", "org_ro", "project_rw", "project_ro"] as const;
export type KeyKind = (typeof KEY_KINDS)[number];
/** Roles of people in tenant A; a portal admin sees every tenant by design, so it is left out. */
export const ROLES = ["org_owner", "org_admin", "project_admin", "project_member", "org_member", "outsider"] as const satisfies readonly PersonRole[];
export type Role = (typeof ROLES)[number];

export interface Tenant {
  name: string;
  organizationId: string;
  /** Ids of the tenant's own resources: a 2xx to the other tenant on one of these in the path is a leak. */
  ids: string[];
  /** People's user ids (accounts are not tenant-owned: they go into the id pool but are not leak markers). */
  userIds: string[];
  /** Strings that must never reach the other tenant: ids, names, hostnames, key secrets, session tokens. */
  secrets: string[];
  keys: Record<KeyKind, string[]>;
  sessions: Record<Role, string>;
}

export async function buildTenant(cp: FuzzTarget, label: "A" | "B", keysPerKind: number): Promise<Tenant> {
  const services = cp.app.services;
  const tag = `${label}${randomUUID().slice(0, 8)}`;
  const name = `Fuzz tenant ${tag}`;
  const demo = await createDemoOrganization(cp.database.db, services, { name });
  const org = { organizationId: demo.organization_id, projectId: null };
  const other = await services.projects.create(org, { name: `Other ${tag}`, server_id: demo.server_id, default_branch: "main" });
  const otherEnv = await services.environments.create(org, { project_id: other.id, name: `env-${tag.toLowerCase()}` });
  const task = await services.deployments.requestAction(org, demo.environments.running, "deploy", { userId: null, apiKeyId: null });
  const hook = await services.webhooks.create(org, { url: `https://hooks.example.com/${tag}`, events: ["deployment.completed"] });
  const keys = { org_rw: [demo.api_keys.org_rw], org_ro: [demo.api_keys.org_ro], project_rw: [demo.api_keys.project_rw], project_ro: [demo.api_keys.project_ro] } as Record<KeyKind, string[]>;
  for (let i = 1; i < keysPerKind; i++) {
    for (const kind of KEY_KINDS) {
      const projectId = kind.startsWith("project") ? demo.project_id : null;
      const access = kind.endsWith("rw") ? "full_access" : "read_only";
      keys[kind].push((await services.apiKeys.create({ organizationId: org.organizationId, projectId, access, name: `${kind} ${i} ${tag}`, createdBy: null })).key);
    }
  }
  const { data: keyRows } = await services.apiKeys.list(org, { limit: 100 });
  const sessions = {} as Record<Role, string>;
  const userIds: string[] = [];
  const emails: string[] = [];
  for (const role of ROLES) {
    cp.clock.advance(61_000); // past the login limit's window
    const p = await addPerson(cp.app, role, { organizationId: org.organizationId, projectId: demo.project_id });
    sessions[role] = p.token;
    userIds.push(p.userId);
    emails.push(p.email);
  }
  const ids = [
    demo.organization_id,
    demo.server_id,
    demo.project_id,
    demo.environments.running,
    demo.environments.stopped,
    other.id,
    otherEnv.id,
    task.id,
    hook.id,
    ...keyRows.map((k) => k.id),
  ];
  const { rows } = await cp.database.pool.query<{ v: string }>(
    "select name as v from servers where organization_id = $1 union all select hostname from servers where organization_id = $1 union all select domain from environments where organization_id = $1 and domain is not null",
    [org.organizationId],
  );
  const secrets = [...ids, ...rows.map((r) => r.v), name, tag, `Other ${tag}`, ...Object.values(keys).flat(), ...Object.values(sessions)];
  return { name, organizationId: org.organizationId, ids, userIds, secrets, keys, sessions };
}
