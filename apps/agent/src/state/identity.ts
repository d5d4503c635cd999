// The server's identity, written once at enrolment: who we are to the control plane
// (server_id, our private key) and whom we trust to command us (the pinned signing keys).
import { chmodSync, existsSync, readFileSync, statSync } from "node:fs";
import { Type, type Static } from "typebox";
import { Compile } from "typebox/compile";
import {
  SigningKey,
  Timestamp,
  firstError,
  Uuid,
  importPrivateKey,
  importPublicKey,
  keyIdFor,
  type KeyObject,
} from "@berth/protocol";
import { writeFileAtomic } from "./atomic-write.ts";
import { SECRET_FILE_MODE, ensureStateDir, type StatePaths } from "./state-dir.ts";

export const Identity = Type.Object({
  server_id: Uuid,
  control_plane_url: Type.String({ minLength: 1 }),
  /** From the enrolment answer; a path on the control plane's origin, never another host. */
  connect_path: Type.String({ pattern: "^/(?!/)" }),
  signing_keys: Type.Array(SigningKey, { minItems: 1 }),
  enrolled_at: Timestamp,
});
export type Identity = Static<typeof Identity>;

const checkIdentity = Compile(Identity);

export class StateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateError";
  }
}

export interface LoadedIdentity {
  identity: Identity;
  privateKey: KeyObject;
  /** Pinned command-signing keys by key id, as verifyCommand wants them. */
  trustedKeys: Map<string, KeyObject>;
}

export function identityExists(paths: StatePaths): boolean {
  return existsSync(paths.identity);
}

/** The key goes first: identity.json existing is what marks the enrolment complete. */
export function saveIdentity(paths: StatePaths, identity: Identity, privateKeyPem: string): void {
  ensureStateDir(paths.dir);
  writeFileAtomic(paths.privateKey, privateKeyPem, SECRET_FILE_MODE);
  writeFileAtomic(paths.identity, `${JSON.stringify(identity, null, 2)}\n`, SECRET_FILE_MODE);
}

/** Rewrites identity.json with a new set of pinned signing keys (keys.update). */
export function saveSigningKeys(paths: StatePaths, identity: Identity, keys: SigningKey[]): Identity {
  const next = { ...identity, signing_keys: keys };
  writeFileAtomic(paths.identity, `${JSON.stringify(next, null, 2)}\n`, SECRET_FILE_MODE);
  return next;
}

/** Reads and checks identity and key; throws a StateError saying what to do. */
export function loadIdentity(paths: StatePaths): LoadedIdentity {
  if (!existsSync(paths.identity)) {
    throw new StateError(
      `this server is not enrolled (no ${paths.identity}): run "berth-agent enroll --url URL --token TOKEN" first`,
    );
  }
  const identity = readIdentity(paths.identity);
  const trustedKeys = new Map<string, KeyObject>();
  for (const key of identity.signing_keys) {
    let publicKey: KeyObject;
    try {
      publicKey = importPublicKey(key.public_key);
    } catch (error) {
      throw new StateError(`${paths.identity}: signing key ${key.key_id} is not an Ed25519 key (${message(error)})`);
    }
    // A key id that does not match its key would let one key pass for another in commands.
    if (keyIdFor(publicKey) !== key.key_id) {
      throw new StateError(`${paths.identity}: signing key id ${key.key_id} does not match its key`);
    }
    trustedKeys.set(key.key_id, publicKey);
  }
  return { identity, privateKey: readPrivateKey(paths.privateKey), trustedKeys };
}

function readIdentity(path: string): Identity {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new StateError(`cannot read ${path}: ${message(error)}`);
  }
  if (!checkIdentity.Check(parsed)) {
    throw new StateError(`${path} is damaged (${firstError(checkIdentity, parsed)}); re-enrol with --force`);
  }
  return parsed;
}

function readPrivateKey(path: string): KeyObject {
  let pem: string;
  try {
    pem = readFileSync(path, "utf8");
  } catch (error) {
    throw new StateError(`cannot read the agent's private key: ${message(error)}; re-enrol with --force`);
  }
  // A key copied around by hand may have lost its mode; it must not stay readable by others.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, SECRET_FILE_MODE);
  try {
    return importPrivateKey(pem);
  } catch (error) {
    throw new StateError(`${path} is not an Ed25519 private key (${message(error)}); re-enrol with --force`);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The server id in an identity file, unvalidated: for messages ("already enrolled as ..."). */
export function peekServerId(path: string): string | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
    const id = (parsed as { server_id?: unknown } | null)?.server_id;
    return typeof id === "string" ? id : null;
  } catch {
    return null;
  }
}
