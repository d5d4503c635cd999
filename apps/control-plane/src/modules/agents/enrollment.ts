// Servers and enrolment: a server is created with a one-time, short-lived token; the
// agent exchanges it (once) for the server's identity and the command-signing keys to pin.
// Stored by enrollment.repo.ts.
import { createHash, randomBytes } from "node:crypto";
import type { EnrollRequest, EnrollResponse } from "@berth/protocol";
import { AGENT_CONNECT_PATH } from "@berth/protocol";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { EnrollmentRepo, EnrollmentTokenRow } from "./enrollment.repo.ts";
import type { CommandSigner } from "./signing-keys.ts";

export const ENROLLMENT_TOKEN_TTL_MS = 60 * 60 * 1000;

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

export interface NewServerInput {
  name: string;
  provider?: string | undefined;
  region?: string | undefined;
}

export function createEnrollment(deps: { repo: EnrollmentRepo; clock: Clock; signer: CommandSigner }) {
  const { repo } = deps;

  async function issueToken(serverId: string, createdBy: string | null) {
    const token = `berth_enr_${randomBytes(32).toString("base64url")}`;
    const expiresAt = new Date(deps.clock.now().getTime() + ENROLLMENT_TOKEN_TTL_MS);
    await repo.insertToken({ serverId, tokenHash: hashToken(token), createdBy, createdAt: deps.clock.now(), expiresAt });
    return { token, expires_at: expiresAt.toISOString() };
  }

  return {
    issueToken,

    async createServer(organizationId: string, input: NewServerInput, createdBy: string | null) {
      const serverId = await repo.insertServer({
        organizationId,
        name: input.name,
        provider: input.provider ?? "self-hosted",
        region: input.region ?? null,
        createdAt: deps.clock.now(),
      });
      return { serverId, enrollment: await issueToken(serverId, createdBy) };
    },

    /** The release-signing public key the install command carries (install.sh --key). */
    releaseKey: () => deps.signer.releaseKey(),

    async newToken(organizationId: string, serverId: string, createdBy: string | null) {
      const id = await repo.liveServerId(organizationId, serverId);
      if (!id) throw notFound("Server");
      return issueToken(id, createdBy);
    },

    /** Consumes the token (atomically: two agents racing with one token, one wins). */
    async enroll(req: EnrollRequest): Promise<EnrollResponse> {
      const now = deps.clock.now();
      const usable = (token: EnrollmentTokenRow | undefined) => {
        if (!token) throw new DomainError("invalid_enrollment_token", "The enrolment token is not valid");
        if (token.usedAt) throw new DomainError("enrollment_token_used", "The enrolment token has already been used; create a new one");
        if (token.expiresAt <= now) throw new DomainError("enrollment_token_expired", "The enrolment token has expired; create a new one");
      };
      const serverId = await repo.consumeToken(hashToken(req.token), now, usable, {
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
      });
      return { server_id: serverId, signing_keys: await deps.signer.pinnedKeys(), connect_path: AGENT_CONNECT_PATH };
    },
  };
}
export type Enrollment = ReturnType<typeof createEnrollment>;
