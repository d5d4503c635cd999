// An environment's ERP master password (admin_passwd in odoo.conf: the password of the ERP's
// database manager). The control plane generates it at the environment's first deploy,
// keeps it sealed with the master key, sends it in every deploy and redeploy command, and
// shows it once: in the response of the request that generated it, and in the response of
// a rotation. A rotation takes effect at the environment's next deploy (the agent writes it
// into odoo.conf then).
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { open, seal } from "../../lib/master-key.ts";
import { notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { EnvironmentsRepo } from "./environments.repo.ts";
import type { ErpCredentialsRepo } from "./erp-credentials.repo.ts";

/** 24 random bytes as base64url: 32 characters, 192 bits, no character odoo.conf would mangle. */
export function generateAdminPassword(): string {
  return randomBytes(24).toString("base64url");
}

export function createErpCredentials(deps: { repo: ErpCredentialsRepo; environments: Pick<EnvironmentsRepo, "get">; masterKey: Buffer; clock: Clock }) {
  return {
    /**
     * The environment's master password, generated and stored now when it has none. `created`:
     * this call made it (the caller shows it once); false: it existed (never shown again).
     */
    async ensure(environmentId: string): Promise<{ password: string; created: boolean } | null> {
      const existing = await deps.repo.sealed(environmentId);
      if (existing === undefined) return null;
      if (existing !== null) return { password: open(deps.masterKey, existing), created: false };
      const password = generateAdminPassword();
      if (await deps.repo.setIfAbsent(environmentId, seal(deps.masterKey, password), deps.clock.now())) return { password, created: true };
      const raced = await deps.repo.sealed(environmentId);
      return raced ? { password: open(deps.masterKey, raced), created: false } : null;
    },

    /** The master password a deploy sends; null when none was generated or it does not open (another master key). */
    async current(environmentId: string): Promise<string | null> {
      const sealed = await deps.repo.sealed(environmentId);
      if (!sealed) return null;
      try {
        return open(deps.masterKey, sealed);
      } catch {
        return null;
      }
    },

    /** A new master password for an environment of the scope, returned once; the environment's next deploy sends it. */
    async rotate(scope: Scope, environmentId: string) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      const password = generateAdminPassword();
      const setAt = deps.clock.now();
      await deps.repo.replace(env.id, seal(deps.masterKey, password), setAt);
      return {
        environment_id: env.id,
        admin_password: password,
        rotated_at: setAt.toISOString(),
        applies_at: "next_deploy" as const,
        // Deployed with the previous one: the ERP keeps it until the next deploy writes the new one.
        deploy_needed: env.status !== "pending",
      };
    },
  };
}
export type ErpCredentials = ReturnType<typeof createErpCredentials>;
