// Who may do what to migrations (permissions org.migrations.* of platform spec 5): a
// migration of an organisation the caller has no role in is a 404, as if it did not exist,
// and a role without the permission a 403, as on every platform route. The routes ask here.
import { DomainError } from "../../../lib/errors.ts";
import type { Access } from "../../auth/access.ts";
import type { Permission } from "../../auth/permissions.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { MigrationsRepo } from "./migrations.repo.ts";

export function createMigrationAccess(deps: { repo: Pick<MigrationsRepo, "byId">; access: Pick<Access, "requireOrg"> }) {
  return {
    /** The caller's permission in the organisation (create, list): 404 without a role there, 403 without the permission. */
    async requireOrg(person: SessionPrincipal, organizationId: string, permission: Permission): Promise<void> {
      await deps.access.requireOrg(person, organizationId, permission);
    },

    /** The migration's organisation, after the caller's role there is checked: 404 without one (or no such migration), 403 without the permission. */
    async orgOf(person: SessionPrincipal, migrationId: string, permission: Permission): Promise<string> {
      const m = await deps.repo.byId(migrationId);
      if (!m) throw new DomainError("not_found", "Migration not found");
      try {
        await deps.access.requireOrg(person, m.organizationId, permission);
      } catch (error) {
        if (error instanceof DomainError && error.code === "not_found") throw new DomainError("not_found", "Migration not found");
        throw error;
      }
      return m.organizationId;
    },
  };
}
export type MigrationAccess = ReturnType<typeof createMigrationAccess>;
