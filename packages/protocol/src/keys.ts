// Ed25519 key pairs for both signers (control plane: commands; agent: handshake), and
// their text forms: raw 32-byte public key in base64, private key as PKCS#8 PEM.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";

export type { KeyObject };

// DER headers of an Ed25519 SubjectPublicKeyInfo and PKCS#8 PrivateKeyInfo (RFC 8410);
// the 32 key bytes follow. node:crypto has no raw import, so the header is prepended.
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

export interface KeyPair {
  publicKey: KeyObject;
  privateKey: KeyObject;
}

export function generateKeyPair(): KeyPair {
  return generateKeyPairSync("ed25519");
}

/** Deterministic key from a 32-byte seed; for test vectors and fixtures only. */
export function privateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new TypeError(`Ed25519 seed must be 32 bytes, got ${seed.length}`);
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
}

/** The public half of a private key (or the key itself when it is already public). */
export function publicKeyOf(key: KeyObject): KeyObject {
  return key.type === "public" ? key : createPublicKey(key);
}

export function rawPublicKey(key: KeyObject): Buffer {
  assertEd25519(key);
  const der = publicKeyOf(key).export({ format: "der", type: "spki" });
  return der.subarray(SPKI_PREFIX.length);
}

/** Raw 32-byte public key as base64: the form stored at enrolment and pinned by agents. */
export function exportPublicKey(key: KeyObject): string {
  return rawPublicKey(key).toString("base64");
}

export function importPublicKey(base64: string): KeyObject {
  const raw = Buffer.from(base64, "base64");
  if (raw.length !== 32 || raw.toString("base64") !== base64) {
    throw new TypeError("Ed25519 public key must be 32 bytes in canonical base64");
  }
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: "der", type: "spki" });
}

export function exportPrivateKey(key: KeyObject): string {
  assertEd25519(key);
  if (key.type !== "private") throw new TypeError("expected a private key");
  return key.export({ format: "pem", type: "pkcs8" }).toString();
}

export function importPrivateKey(pem: string): KeyObject {
  const key = createPrivateKey({ key: pem, format: "pem" });
  assertEd25519(key);
  return key;
}

/** Short stable name of a public key: the first 16 hex digits of sha256(raw key). */
export function keyIdFor(key: KeyObject | string): string {
  const raw = typeof key === "string" ? rawPublicKey(importPublicKey(key)) : rawPublicKey(key);
  return createHash("sha256").update(raw).digest("hex").slice(0, 16);
}

function assertEd25519(key: KeyObject): void {
  if (key.asymmetricKeyType !== "ed25519") {
    throw new TypeError(`expected an Ed25519 key, got ${key.asymmetricKeyType ?? key.type}`);
  }
}
