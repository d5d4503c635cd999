// Servers and enrolment: a server is created with a one-time, short-lived token; the
// agent exchanges it (once) for the server's identity and the command-signing keys to pin.
import { createHash, randomBytes } from "node:crypto";
import { and, eq, isNull } from "drizzle-orm";
import type { EnrollRequest, EnrollResponse } from "@berth/protocol";
import { AGENT_CONNECT_PATH } from "@berth/protocol";
import { enrollmentTokens, servers, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { CommandSigner } from "./signing-keys.ts";

export const ENROLLMENT_TOKEN_TTL_MS = 60 * 60 * 1000;

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export interface NewServerInput {
  name: string;
  provider?: string | undefined;
  region?: string | undefined;
}

export function createEnrollment(deps: { db: Database; clock: Clock; signer: CommandSigner }) {
  async function issueToken(serverId: string, createdBy: string | null) {
    const token = `berth_enr_${randomBytes(32).toString("base64url")}`;
    const expiresAt = new Date(deps.clock.now().getTime() + ENROLLMENT_TOKEN_TTL_MS);
    await deps.db.insert(enrollmentTokens).values({ serverId, tokenHash: hashToken(token), createdBy, createdAt: deps.clock.now(), expiresAt });
    return { token, expires_at: expiresAt.toISOString() };
  }

  return {
    issueToken,

    async createServer(organizationId: string, input: NewServerInput, createdBy: string | null) {
      const [row] = await deps.db
        .insert(servers)
        .values({ organizationId, name: input.name, provider: input.provider ?? "self-hosted", region: input.region ?? null, createdAt: deps.clock.now() })
        .returning({ id: servers.id });
      return { serverId: row!.id, enrollment: await issueToken(row!.id, createdBy) };
    },

    async newToken(organizationId: string, serverId: string, createdBy: string | null) {
      const [row] = await deps.db
        .select({ id: servers.id })
        .from(servers)
        .where(and(eq(servers.id, serverId), eq(servers.organizationId, organizationId), isNull(servers.deletedAt)));
      if (!row) throw notFound("Server");
      return issueToken(row.id, createdBy);
    },

    /** Consumes the token (atomically: two agents racing with one token, one wins). */
    async enroll(req: EnrollRequest): Promise<EnrollResponse> {
      const now = deps.clock.now();
      const serverId = await deps.db.transaction(async (tx) => {
        const [token] = await tx.select().from(enrollmentTokens).where(eq(enrollmentTokens.tokenHash, hashToken(req.token))).for("update");
        if (!token) throw new DomainError("invalid_enrollment_token", "The enrolment token is not valid");
        if (token.usedAt) throw new DomainError("enrollment_token_used", "The enrolment token has already been used; create a new one");
        if (token.expiresAt <= now) throw new DomainError("enrollment_token_expired", "The enrolment token has expired; create a new one");
        await tx.update(enrollmentTokens).set({ usedAt: now }).where(eq(enrollmentTokens.id, token.id));
        await tx
          .update(servers)
          .set({
            agentPublicKey: req.public_key,
            agentVersion: req.agent_version,
            hostname: req.host.hostname,
            os: req.host.os,
            arch: req.host.arch,
            cpuCores: req.host.cpu_cores,
            ramMb: req.host.ram_mb,
            diskGb: req.host.disk_gb,
            dockerVersion: req.host.docker_version,
            enrolledAt: now,
            status: "offline",
          })
          .where(eq(servers.id, token.serverId));
        return token.serverId;
      });
      return { server_id: serverId, signing_keys: await deps.signer.pinnedKeys(), connect_path: AGENT_CONNECT_PATH };
    },
  };
}
export type Enrollment = ReturnType<typeof createEnrollment>;
