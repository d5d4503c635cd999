// The HTTP side of the agent link: enrolment (POST /agent/v1/enroll) exchanges a one-time
// token for the server's identity, and the URL the agent then dials (GET /agent/v1/connect).
import { Type, type Static } from "typebox";
import { Base64, Nullable, Uuid } from "./fields.ts";

export const AGENT_ENROLL_PATH = "/agent/v1/enroll";
export const AGENT_CONNECT_PATH = "/agent/v1/connect";

/** Facts about the machine, reported at enrolment (and shown as the server's capacity). */
export const HostFacts = Type.Object({
  hostname: Type.String({ minLength: 1, maxLength: 253 }),
  os: Type.String({ maxLength: 200 }),
  arch: Type.String({ maxLength: 32 }),
  cpu_cores: Type.Integer({ minimum: 0 }),
  ram_mb: Type.Integer({ minimum: 0 }),
  disk_gb: Type.Integer({ minimum: 0 }),
  docker_version: Nullable(Type.String({ maxLength: 64 })),
});
export type HostFacts = Static<typeof HostFacts>;

export const EnrollRequest = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200 }),
  /** The agent's own Ed25519 public key, raw 32 bytes, base64 (exportPublicKey). */
  public_key: Base64,
  agent_version: Type.String({ minLength: 1, maxLength: 64 }),
  host: HostFacts,
});
export type EnrollRequest = Static<typeof EnrollRequest>;

export const SigningKey = Type.Object({
  key_id: Type.String({ pattern: "^[0-9a-f]{16}$" }),
  /** Raw 32-byte Ed25519 public key, base64. */
  public_key: Base64,
});
export type SigningKey = Static<typeof SigningKey>;

export const EnrollResponse = Type.Object({
  server_id: Uuid,
  /** Command-signing keys to pin; commands signed by any other key are rejected. */
  signing_keys: Type.Array(SigningKey, { minItems: 1 }),
  /** Path of the WebSocket endpoint, relative to the control plane's URL. */
  connect_path: Type.String(),
});
export type EnrollResponse = Static<typeof EnrollResponse>;

/** Error codes of POST /agent/v1/enroll (HTTP 401 unless noted). */
export const ENROLL_ERROR_CODES = ["invalid_enrollment_token", "enrollment_token_expired", "enrollment_token_used", "validation_error"] as const;
