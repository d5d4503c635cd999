// Roles of platform spec section 5 and the one table mapping them to permission codes.
// Roles nest: each holds every permission of the roles below it.

export const ROLES = ["project_member", "project_admin", "org_admin", "org_owner", "portal_admin"] as const;
export type Role = (typeof ROLES)[number];

/** Each permission code, the lowest role that holds it, and what a caller without it is told. */
const PERMISSIONS = {
  "project.deployments.list": { min: "project_member", verb: "list deployments" },
  "project.deployments.view": { min: "project_member", verb: "view deployments" },
  "project.backups.list": { min: "project_member", verb: "list backups" },
  "project.environments.deploy": { min: "project_admin", verb: "deploy" },
  "project.deployments.cancel": { min: "project_admin", verb: "cancel deployments" },
  "project.environments.update": { min: "project_admin", verb: "change environments" },
  "project.environments.operate": { min: "project_admin", verb: "restart, stop or start environments" },
  "project.backups.create": { min: "project_admin", verb: "create backups" },
  "project.backups.restore": { min: "project_admin", verb: "restore backups" },
  "project.backups.download": { min: "project_admin", verb: "download backups" },
  "project.backups.delete": { min: "project_admin", verb: "delete backups" },
  "project.members.manage": { min: "project_admin", verb: "manage project members" },
  "org.view": { min: "project_member", verb: "view this organisation" },
  "org.events.subscribe": { min: "project_member", verb: "subscribe to events" },
  "org.servers.list": { min: "project_member", verb: "list servers" },
  "org.members.list": { min: "project_member", verb: "list members" },
  "org.migrations.list": { min: "project_member", verb: "list migrations" },
  "org.members.manage": { min: "org_admin", verb: "manage members" },
  "org.projects.manage": { min: "org_admin", verb: "manage projects" },
  "org.servers.manage": { min: "org_admin", verb: "manage servers" },
  "org.api_keys.manage": { min: "org_admin", verb: "manage API keys" },
  "org.webhooks.manage": { min: "org_admin", verb: "manage webhooks" },
  "org.migrations.create": { min: "org_admin", verb: "create migrations" },
  "org.migrations.update": { min: "org_admin", verb: "change migrations" },
  "org.migrations.execute": { min: "org_admin", verb: "start migrations" },
  "org.migrations.delete": { min: "org_admin", verb: "delete migrations" },
  "org.audit.read": { min: "org_owner", verb: "read the audit log" },
  "org.owners.manage": { min: "org_owner", verb: "make, demote or remove owners" },
  "support.console": { min: "portal_admin", verb: "use the support console" },
  "org.addon_repositories.manage": { min: "org_admin", verb: "manage add-on repositories" },
  "platform.addon_repositories.manage": { min: "portal_admin", verb: "manage the platform's add-on repositories" },
} as const satisfies Record<string, { min: Role; verb: string }>;

export type Permission = keyof typeof PERMISSIONS;
export const PERMISSION_CODES = Object.keys(PERMISSIONS) as Permission[];

const rank = (role: Role) => ROLES.indexOf(role);

export function can(role: Role | null, permission: Permission): boolean {
  return role !== null && rank(role) >= rank(PERMISSIONS[permission].min);
}

/** The 403 message, e.g. "You don't have permission to deploy." */
export function deniedMessage(permission: Permission): string {
  return `You don't have permission to ${PERMISSIONS[permission].verb}.`;
}

/** The permission codes a role holds (for GET /me and the dashboard's buttons). */
export function permissionsOf(role: Role | null): Permission[] {
  return PERMISSION_CODES.filter((p) => can(role, p));
}

/** The higher of two roles; null is no role. */
export function higher(a: Role | null, b: Role | null): Role | null {
  if (a === null) return b;
  if (b === null) return a;
  return rank(a) >= rank(b) ? a : b;
}

/** The organisation roles as stored in memberships. */
export const STORED_ORG_ROLES = ["owner", "admin", "member"] as const;

/** The stored organisation roles that hold a permission (e.g. which see every project of the organisation). */
export function storedOrgRolesWith(permission: Permission): string[] {
  return STORED_ORG_ROLES.filter((stored) => can(orgRole(stored), permission));
}

/** A stored organisation role (owner | admin | member) as a platform role; a plain member has none of its own. */
export function orgRole(stored: string | null | undefined): Role | null {
  return stored === "owner" ? "org_owner" : stored === "admin" ? "org_admin" : null;
}

/** A stored project role (admin | member) as a platform role. */
export function projectRole(stored: string | null | undefined): Role | null {
  return stored === "admin" ? "project_admin" : stored === "member" ? "project_member" : null;
}
