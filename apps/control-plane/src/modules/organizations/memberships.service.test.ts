import { describe, expect, it } from "vitest";
import type { Role } from "../auth/permissions.ts";
import { checkMembershipChange, type MembershipChange, type OrgRole } from "./memberships.service.ts";

const ME = "me";
const THEM = "them";

/** The error code the change is refused with, or "ok". */
function verdict(callerRole: Role, current: OrgRole | undefined, next: OrgRole | null, owners = 1, userId = THEM): string {
  const c: MembershipChange = { caller: { userId: ME, role: callerRole }, userId, current, next, owners };
  try {
    checkMembershipChange(c);
    return "ok";
  } catch (err) {
    return (err as { code: string }).code;
  }
}

describe("the owner rules", () => {
  it("an admin manages admins and members, never owners", () => {
    expect(verdict("org_admin", "admin", "member")).toBe("ok");
    expect(verdict("org_admin", "member", "admin")).toBe("ok");
    expect(verdict("org_admin", undefined, "admin")).toBe("ok");
    expect(verdict("org_admin", "admin", null)).toBe("ok");
    expect(verdict("org_admin", "owner", "admin", 2)).toBe("owner_required");
    expect(verdict("org_admin", "owner", null, 2)).toBe("owner_required");
    expect(verdict("org_admin", "member", "owner")).toBe("owner_required");
    expect(verdict("org_admin", undefined, "owner")).toBe("owner_required");
    expect(verdict("org_admin", "admin", "owner", 1, ME)).toBe("owner_required");
  });

  it("owners and portal admins manage owners, but never the last one away", () => {
    for (const role of ["org_owner", "portal_admin"] as const) {
      expect(verdict(role, "member", "owner")).toBe("ok");
      expect(verdict(role, "owner", "admin", 2)).toBe("ok");
      expect(verdict(role, "owner", null, 2)).toBe("ok");
      expect(verdict(role, "owner", "admin", 1)).toBe("last_owner");
      expect(verdict(role, "owner", null, 1)).toBe("last_owner");
      expect(verdict(role, "owner", "owner", 1)).toBe("ok");
    }
    expect(verdict("org_owner", "owner", "admin", 1, ME)).toBe("last_owner");
    expect(verdict("org_owner", "owner", null, 1, ME)).toBe("last_owner");
  });

  it("members below admin manage nobody but may leave; removing a non-member is a 404", () => {
    expect(verdict("project_admin", "member", null)).toBe("permission_denied");
    expect(verdict("project_member", "member", "admin")).toBe("permission_denied");
    expect(verdict("project_member", "member", "admin", 1, ME)).toBe("permission_denied");
    expect(verdict("project_member", "member", null, 1, ME)).toBe("ok");
    expect(verdict("org_admin", undefined, null)).toBe("not_found");
    // Without the right to manage members, whether someone is a member is not told.
    expect(verdict("project_member", undefined, null)).toBe("permission_denied");
  });
});
