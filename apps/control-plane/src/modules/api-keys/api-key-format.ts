// API key text: svc_live_ro_<secret> (read-only) or svc_live_rw_<secret> (full access).
// Only the SHA-256 of the whole key and a short display prefix are ever stored; the key
// has 192 random bits, so a fast hash is enough (passwords get scrypt, keys need not).
import { hash, randomBytes } from "node:crypto";

export type KeyAccess = "read_only" | "full_access";

const PREFIX: Record<KeyAccess, string> = { read_only: "svc_live_ro_", full_access: "svc_live_rw_" };
const SHAPE = /^svc_live_(ro|rw)_[A-Za-z0-9_-]{32}$/;

export function generateApiKey(access: KeyAccess): { secret: string; hash: string; displayPrefix: string } {
  const secret = PREFIX[access] + randomBytes(24).toString("base64url");
  return { secret, hash: hashApiKey(secret), displayPrefix: secret.slice(0, 16) };
}

/** Runs on every public API request: the one-shot hash, without a Hash object per call. */
export function hashApiKey(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** Cheap shape check before touching the database. */
export function looksLikeApiKey(text: string): boolean {
  return SHAPE.test(text);
}
