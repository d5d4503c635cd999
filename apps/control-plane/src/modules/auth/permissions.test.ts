import { describe, expect, it } from "vitest";
import { can, deniedMessage, permissionsOf, ROLES, type Permission, type Role } from "./permissions.ts";

// The matrix a reader of the docs sees: which role may do what.
const EXPECTED: Record<Permission, Role> = {
  "project.deployments.list": "project_member",
  "project.deployments.view": "project_member",
  "project.backups.list": "project_member",
  "project.environments.deploy": "project_admin",
  "project.deployments.cancel": "project_admin",
  "project.environments.update": "project_admin",
  "project.environments.operate": "project_admin",
  "project.backups.create": "project_admin",
  "project.backups.restore": "project_admin",
  "project.backups.download": "project_admin",
  "project.backups.delete": "project_admin",
  "project.members.manage": "project_admin",
  "org.view": "project_member",
  "org.events.subscribe": "project_member",
  "org.servers.list": "project_member",
  "org.members.list": "project_member",
  "org.migrations.list": "project_member",
  "org.members.manage": "org_admin",
  "org.projects.manage": "org_admin",
  "org.servers.manage": "org_admin",
  "org.api_keys.manage": "org_admin",
  "org.webhooks.manage": "org_admin",
  "org.migrations.create": "org_admin",
  "org.migrations.update": "org_admin",
  "org.migrations.execute": "org_admin",
  "org.migrations.delete": "org_admin",
  "org.audit.read": "org_owner",
  "org.owners.manage": "org_owner",
  "support.console": "portal_admin",
  "org.addon_repositories.manage": "org_admin",
  "platform.addon_repositories.manage": "portal_admin",
};

describe("role to permission table", () => {
  for (const [permission, lowest] of Object.entries(EXPECTED) as [Permission, Role][]) {
    it(`${permission}: ${lowest} and above`, () => {
      for (const role of ROLES) expect(can(role, permission), role).toBe(ROLES.indexOf(role) >= ROLES.indexOf(lowest));
      expect(can(null, permission)).toBe(false);
    });
  }
  it("only owners (and portal admins) manage owners; admins manage members", () => {
    expect(can("org_admin", "org.members.manage")).toBe(true);
    expect(can("org_admin", "org.owners.manage")).toBe(false);
    expect(can("org_owner", "org.owners.manage")).toBe(true);
    expect(can("portal_admin", "org.owners.manage")).toBe(true);
  });
  it("says who lacks deploy permission in the spec's words", () => {
    expect(deniedMessage("project.environments.deploy")).toBe("You don't have permission to deploy.");
  });
  it("a portal admin holds every permission, a project member only the read ones", () => {
    expect(permissionsOf("portal_admin")).toHaveLength(Object.keys(EXPECTED).length);
    expect(permissionsOf("project_member").every((p) => EXPECTED[p] === "project_member")).toBe(true);
  });
});
