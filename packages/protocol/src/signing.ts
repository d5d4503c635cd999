// Ed25519 signatures over canonical JSON: the control plane signs commands, the agent
// verifies them before anything runs; the agent signs the handshake challenge.
import { sign, verify, type KeyObject } from "node:crypto";
import { canonicalize } from "./canonical.ts";
import {
  checkCommand,
  checkSignedCommandShape,
  type Command,
  type CommandRejectionCode,
  type CommandType,
  type SignedCommand,
  type UnsignedCommand,
} from "./commands.ts";
import { firstError } from "./validation.ts";

/** Tolerated difference between the control plane's clock and the agent's. */
export const DEFAULT_CLOCK_SKEW_MS = 30_000;

/**
 * The exact text a command signature covers: every field but `signature`, canonicalised.
 * Fields this build does not know are included, so nobody can add one after signing.
 */
export function commandSigningText(cmd: Omit<SignedCommand, "signature"> | SignedCommand): string {
  const { signature: _signature, ...signed } = cmd as SignedCommand;
  return canonicalize(signed);
}

/**
 * Signs a command. Throws a TypeError when the command breaks its schema: signing a
 * command the agent will reject only delays the failure.
 */
export function signCommand<T extends CommandType>(
  unsigned: UnsignedCommand<T>,
  privateKey: KeyObject,
  keyId: string,
): Command<T> {
  const body = { ...unsigned, key_id: keyId } as Omit<SignedCommand, "signature">;
  const text = commandSigningText(body);
  const signed = { ...body, signature: sign(null, Buffer.from(text, "utf8"), privateKey).toString("base64") };
  if (!checkSignedCommandShape.Check(signed)) {
    throw new TypeError(`signCommand: ${firstError(checkSignedCommandShape, signed)}`);
  }
  const checked = checkCommand(signed);
  if (!checked.ok) throw new TypeError(`signCommand: ${checked.message}`);
  return checked.command as Command<T>;
}

export interface VerifyOptions {
  /** Control-plane public keys the agent pinned at enrolment, by key id. */
  trustedKeys: ReadonlyMap<string, KeyObject>;
  /** The server this agent runs on. */
  serverId: string;
  now: Date;
  clockSkewMs?: number;
  /** True when the agent's journal already holds this command id. */
  seenCommandIds?: (commandId: string) => boolean;
  /**
   * The highest seq of a command the agent ran and then forgot (pruned from its journal).
   * A command it does not know at or below it can only be a replay of one it forgot.
   */
  forgottenSeq?: number;
}

export type VerifyResult =
  | { ok: true; command: Command }
  | { ok: false; code: CommandRejectionCode; message: string };

/**
 * Decides whether an agent may run a command. Checks, in order: shape, known key,
 * signature, server id, validity window, replay (a known id, then a seq at or below the
 * forgotten one), then type and params. Authenticity comes first so nothing about an
 * unauthenticated command is acted on. Never throws.
 */
export function verifyCommand(cmd: SignedCommand, options: VerifyOptions): VerifyResult {
  if (!checkSignedCommandShape.Check(cmd)) {
    return reject("invalid_params", `command ${firstError(checkSignedCommandShape, cmd)}`);
  }

  const key = options.trustedKeys.get(cmd.key_id);
  if (key === undefined) return reject("unknown_key", `key "${cmd.key_id}" is not trusted`);

  let text: string;
  try {
    text = commandSigningText(cmd);
  } catch (error) {
    return reject("invalid_params", error instanceof Error ? error.message : "not canonicalisable");
  }
  if (!verifySignature(text, cmd.signature, key)) return reject("bad_signature", "signature does not verify");

  if (cmd.server_id !== options.serverId) {
    return reject("wrong_server", `command is for server ${cmd.server_id}`);
  }

  const now = options.now.getTime();
  const skew = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
  const issuedAt = Date.parse(cmd.issued_at);
  const expiresAt = Date.parse(cmd.expires_at);
  // Unparseable dates fail closed: NaN compares false, so they never pass.
  if (!(now <= expiresAt + skew)) return reject("expired", `expired at ${cmd.expires_at}`);
  if (!(issuedAt - skew <= now)) return reject("expired", `not valid before ${cmd.issued_at}`);

  if (options.seenCommandIds?.(cmd.command_id) === true) {
    return reject("replayed", `command ${cmd.command_id} was already received`);
  }
  if (options.forgottenSeq !== undefined && cmd.seq <= options.forgottenSeq) {
    return reject(
      "stale_command",
      `seq ${cmd.seq} is at or below ${options.forgottenSeq}, the highest this agent has forgotten: a replay of a command that already ran`,
    );
  }

  const checked = checkCommand(cmd);
  if (!checked.ok) return reject(checked.code, checked.message);
  return { ok: true, command: checked.command };
}

// Binds the signature to its purpose and to the server, so a signature made for one
// handshake (or by one server's agent) proves nothing anywhere else.
const CHALLENGE_PURPOSE = "berth-agent-challenge-v1";

function challengeText(nonce: string, serverId: string): string {
  return canonicalize({ nonce, purpose: CHALLENGE_PURPOSE, server_id: serverId });
}

/** The agent's `hello.challenge_signature`: base64 Ed25519 signature over the challenge. */
export function signChallenge(nonce: string, serverId: string, privateKey: KeyObject): string {
  return sign(null, Buffer.from(challengeText(nonce, serverId), "utf8"), privateKey).toString("base64");
}

/** Whether `signature` is the agent's signature of this challenge. Never throws. */
export function verifyChallenge(nonce: string, serverId: string, signature: string, publicKey: KeyObject): boolean {
  let text: string;
  try {
    text = challengeText(nonce, serverId);
  } catch {
    return false;
  }
  return verifySignature(text, signature, publicKey);
}

function verifySignature(text: string, signature: string, publicKey: KeyObject): boolean {
  const bytes = Buffer.from(signature, "base64");
  // Buffer's decoder skips junk; requiring the canonical encoding leaves one valid
  // spelling per signature.
  if (bytes.length !== 64 || bytes.toString("base64") !== signature) return false;
  try {
    return verify(null, Buffer.from(text, "utf8"), publicKey, bytes);
  } catch {
    return false;
  }
}

function reject(code: CommandRejectionCode, message: string): VerifyResult {
  return { ok: false, code, message };
}
