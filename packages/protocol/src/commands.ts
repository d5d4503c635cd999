// Commands the control plane sends an agent: the signed wrapper every command shares, and
// the parameters of each command type (deploy and route: deploy-params.ts; backup and
// restore: data-params.ts; the small ones here). CommandParams<T> is the one type of a
// command's parameters from the control plane's dispatcher to the agent's handler.
import { Type, type Static, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { Base64, JsonObject, LiteralUnion, Nullable, Seq, Timestamp, Uuid } from "./fields.ts";
import { SigningKey } from "./enrollment.ts";
import { firstError, isUnknownProperty, type SchemaCheck } from "./validation.ts";
import { DeployParams, RouteParams } from "./deploy-params.ts";
import { BackupParams, RestoreParams } from "./data-params.ts";

export const COMMAND_TYPES = [
  "deploy",
  "redeploy",
  "restart",
  "start",
  "stop",
  "backup",
  "restore",
  "destroy",
  "logs.tail",
  "diagnostics",
  "keys.update",
  "agent.update",
  "route",
] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

// Parameter schemas reject unknown fields: an agent that silently ignored an instruction
// it does not understand (a new flag, say) would do something other than what was signed.
const strict = { additionalProperties: false } as const;

/** restart, start and stop: the operation's deployment row and its environment. */
export const LifecycleParams = Type.Object({ deployment_id: Uuid, environment_id: Uuid }, strict);
export type LifecycleParams = Static<typeof LifecycleParams>;

export const DestroyParams = Type.Object(
  { deployment_id: Uuid, environment_id: Uuid, delete_data: Type.Boolean() },
  strict,
);
export type DestroyParams = Static<typeof DestroyParams>;

export const LogsTailParams = Type.Object(
  { environment_id: Uuid, lines: Type.Integer({ minimum: 1, maximum: 10_000 }) },
  strict,
);
export type LogsTailParams = Static<typeof LogsTailParams>;

// Typed as an empty record: typebox 1 types an object without properties as `object`, which a
// params field (a JSON object) does not accept.
export const DiagnosticsParams = Type.Unsafe<Record<string, never>>(Type.Object({}, strict));
export type DiagnosticsParams = Static<typeof DiagnosticsParams>;

/**
 * The complete set of command-signing keys the agent pins from now on. It is itself a
 * signed command, so only a key the agent already trusts can introduce or retire one.
 */
export const KeysUpdateParams = Type.Object({ signing_keys: Type.Array(SigningKey, { minItems: 1, maxItems: 8 }) }, strict);
export type KeysUpdateParams = Static<typeof KeysUpdateParams>;

/**
 * A newer agent executable to install. The command is signed with a key the agent pinned at
 * enrolment, so `sha256` is an authenticated digest of the executable: the download itself
 * needs no signature of its own, and the agent installs only bytes with exactly this digest
 * and size. `url` is where to fetch it (the control plane's own download route).
 */
export const AgentUpdateParams = Type.Object(
  {
    version: Type.String({ pattern: "^[0-9]+\\.[0-9]+\\.[0-9]+(?:[-+][0-9A-Za-z.-]+)?$", maxLength: 64 }),
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: "^https?://" }),
    sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
    size: Type.Integer({ minimum: 1, maximum: 1024 * 1024 * 1024 }),
  },
  strict,
);
export type AgentUpdateParams = Static<typeof AgentUpdateParams>;

export const COMMAND_PARAMS = {
  deploy: DeployParams,
  redeploy: DeployParams,
  restart: LifecycleParams,
  start: LifecycleParams,
  stop: LifecycleParams,
  backup: BackupParams,
  restore: RestoreParams,
  destroy: DestroyParams,
  "logs.tail": LogsTailParams,
  diagnostics: DiagnosticsParams,
  "keys.update": KeysUpdateParams,
  "agent.update": AgentUpdateParams,
  route: RouteParams,
} as const satisfies Record<CommandType, TSchema>;

export type CommandParams<T extends CommandType> = Static<(typeof COMMAND_PARAMS)[T]>;

/**
 * A command as it travels. `type` and `params` are checked loosely here so that a command
 * of a type this agent does not know still parses, verifies, and can be rejected as
 * `unsupported_command` with its id; `checkCommand` then applies the per-type schema.
 * Unknown top-level fields are kept, and the signature covers them.
 */
export const SignedCommand = Type.Object({
  command_id: Uuid,
  server_id: Uuid,
  /** Per server, increasing; the agent reports the highest it journaled in `hello`. */
  seq: Seq,
  type: Type.String({ minLength: 1, maxLength: 64 }),
  issued_at: Timestamp,
  expires_at: Timestamp,
  key_id: Type.String({ minLength: 1, maxLength: 64 }),
  /** User who caused the command; null for the platform itself (schedules, hooks). */
  issued_by: Nullable(Type.String({ minLength: 1, maxLength: 128 })),
  params: JsonObject,
  signature: Base64,
});
export type SignedCommand = Static<typeof SignedCommand>;

/** A signed command whose type is known and whose params match that type. */
export type Command<T extends CommandType = CommandType> = T extends CommandType
  ? Omit<SignedCommand, "type" | "params"> & { type: T; params: CommandParams<T> }
  : never;

/** What the control plane fills in before signing; `signCommand` adds key_id and signature. */
export type UnsignedCommand<T extends CommandType = CommandType> = T extends CommandType
  ? Omit<Command<T>, "key_id" | "signature">
  : never;

export const COMMAND_REJECTION_CODES = [
  "bad_signature",
  "unknown_key",
  "wrong_server",
  "expired",
  "replayed",
  /** An unknown command at or below the highest seq the agent has forgotten: a replay of one it already ran. */
  "stale_command",
  "invalid_params",
  "unsupported_command",
] as const;
export type CommandRejectionCode = (typeof COMMAND_REJECTION_CODES)[number];
export const CommandRejectionCode = LiteralUnion(COMMAND_REJECTION_CODES);

export function isCommandType(type: string): type is CommandType {
  return (COMMAND_TYPES as readonly string[]).includes(type);
}

export const checkSignedCommandShape = Compile(SignedCommand);

const PARAM_CHECKS = Object.fromEntries(
  COMMAND_TYPES.map((type) => [type, Compile(COMMAND_PARAMS[type] as TSchema) as SchemaCheck]),
) as Record<CommandType, SchemaCheck>;

export type CommandCheck =
  | { ok: true; command: Command }
  | { ok: false; code: "unsupported_command" | "invalid_params"; message: string };

/** Narrows a structurally valid signed command to its typed form. Never throws. */
export function checkCommand(cmd: SignedCommand): CommandCheck {
  if (!isCommandType(cmd.type)) {
    return { ok: false, code: "unsupported_command", message: `unsupported command type "${cmd.type}"` };
  }
  const check = PARAM_CHECKS[cmd.type];
  if (!check.Check(cmd.params)) {
    // A parameter this agent has no field for: most likely sent by a newer control plane.
    const newer = isUnknownProperty(check, cmd.params) ? " (a parameter this agent does not know: update the agent to the control plane's release)" : "";
    return { ok: false, code: "invalid_params", message: `params: ${firstError(check, cmd.params)}${newer}` };
  }
  return { ok: true, command: cmd as Command };
}
