// An environment's ERP master password (admin_passwd in odoo.conf: the password of the ERP's
// database manager). The control plane generates it at the environment's first deploy,
// keeps it sealed with the master key, sends it in every deploy and redeploy command, and
// shows it once: in the response of the request that generated it, and in the response of
// a rotation. A rotation takes effect at the environment's next deploy (the agent writes it
// into odoo.conf then).
//
// Beside it, the administrator's login password (user admin, which Odoo creates with the
// password "admin"): generated with the master password, shown once the same way, set in
// the database by the deploy that initialises it. Unlike the master password it is sent
// only while the database does not have it yet (a deploy reports the version it set), so a
// password the administrator later changes in the ERP is never overwritten, except by an
// explicit rotation.
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { open, seal } from "../../lib/master-key.ts";
import { notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { EnvironmentsRepo } from "./environments.repo.ts";
import type { ErpCredentialsRepo } from "./erp-credentials.repo.ts";

/** The administrator's login (Odoo's base.user_admin). */
export const ADMIN_LOGIN = "admin";

/** 24 random bytes as base64url: 32 characters, 192 bits, no character odoo.conf would mangle. */
export function generateAdminPassword(): string {
  return randomBytes(24).toString("base64url");
}

export function createErpCredentials(deps: { repo: ErpCredentialsRepo; environments: Pick<EnvironmentsRepo, "get">; masterKey: Buffer; clock: Clock }) {
  /**
   * A password kept sealed, generated and stored now when there is none (`store` writes it only
   * if still absent). `created`: this call made it (the caller shows it once); false: it existed
   * (never shown again). Null: no such environment.
   */
  async function ensureSealed(
    read: () => Promise<string | null | undefined>,
    store: (sealed: string, at: Date) => Promise<boolean>,
  ): Promise<{ password: string; created: boolean } | null> {
    const existing = await read();
    if (existing === undefined) return null;
    if (existing !== null) return { password: open(deps.masterKey, existing), created: false };
    const password = generateAdminPassword();
    if (await store(seal(deps.masterKey, password), deps.clock.now())) return { password, created: true };
    const raced = await read();
    return raced ? { password: open(deps.masterKey, raced), created: false } : null;
  }

  /** A new password for an environment of the scope, stored sealed by `replace`; returned once with the environment. */
  async function rotated(scope: Scope, environmentId: string, replace: (id: string, sealed: string, at: Date) => Promise<void>) {
    const env = await deps.environments.get(scope, environmentId);
    if (!env) throw notFound("Environment");
    const password = generateAdminPassword();
    const setAt = deps.clock.now();
    await replace(env.id, seal(deps.masterKey, password), setAt);
    return {
      environment_id: env.id,
      password,
      rotated_at: setAt.toISOString(),
      applies_at: "next_deploy" as const,
      // Deployed with the previous one: the ERP keeps it until the next deploy applies the new one.
      deploy_needed: env.status !== "pending",
    };
  }

  return {
    /** The environment's master password, generated and stored now when it has none. */
    ensure: (environmentId: string) =>
      ensureSealed(
        () => deps.repo.sealed(environmentId),
        (sealed, at) => deps.repo.setIfAbsent(environmentId, sealed, at),
      ),

    /**
     * The administrator's login password, generated now when it has none. Not for an
     * environment a migration created: its database keeps the users and passwords of the
     * backup (a rotation still sets a new one).
     */
    ensureLogin: (environmentId: string) =>
      ensureSealed(
        async () => {
          const row = await deps.repo.login(environmentId);
          if (row?.migrationId && row.enc === null) return undefined;
          return row === undefined ? undefined : row.enc;
        },
        (sealed, at) => deps.repo.setLoginIfAbsent(environmentId, sealed, at),
      ),

    /**
     * The login password a deploy must set, with its version (when it was made), while the
     * database does not have that version; null when it has it (or it does not open).
     */
    async pendingLogin(environmentId: string): Promise<{ password: string; version: string } | null> {
      const row = await deps.repo.login(environmentId);
      if (!row?.enc || !row.setAt) return null;
      if (row.appliedAt !== null && row.appliedAt.getTime() >= row.setAt.getTime()) return null;
      try {
        return { password: open(deps.masterKey, row.enc), version: row.setAt.toISOString() };
      } catch {
        return null;
      }
    },

    /** A new administrator login password, returned once; the environment's next deploy sets it in the database. */
    async rotateLogin(scope: Scope, environmentId: string) {
      const { password, ...rest } = await rotated(scope, environmentId, (id, sealed, at) => deps.repo.replaceLogin(id, sealed, at));
      return { ...rest, login: ADMIN_LOGIN, admin_login_password: password };
    },

    /** A new master password for an environment of the scope, returned once; the environment's next deploy sends it. */
    async rotate(scope: Scope, environmentId: string) {
      const { password, ...rest } = await rotated(scope, environmentId, (id, sealed, at) => deps.repo.replace(id, sealed, at));
      return { ...rest, admin_password: password };
    },
  };
}
export type ErpCredentials = ReturnType<typeof createErpCredentials>;
