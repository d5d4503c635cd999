// Commands the control plane sends an agent: the signed wrapper every command shares,
// and the parameters of each command type.
import { Type, type Static, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { Base64, JsonObject, LiteralUnion, Nullable, Seq, Timestamp, Uuid } from "./fields.ts";
import { SigningKey } from "./enrollment.ts";
import { firstError, isUnknownProperty, type SchemaCheck } from "./validation.ts";

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

/** A lowercase host name of two labels or more: what the proxy routes and certifies. */
export const HOSTNAME_PATTERN =
  "^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$";
const Hostname = Type.String({ pattern: HOSTNAME_PATTERN });
/** A domain's aliases beside it; each is routed and certified like the domain. */
export const MAX_DOMAIN_ALIASES = 10;
const ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$";

export const GitSource = Type.Object(
  {
    url: Type.String({ minLength: 1 }),
    branch: Type.String({ minLength: 1 }),
    /** Null deploys the branch head at the time the agent clones. */
    commit: Nullable(Type.String({ pattern: "^[0-9a-f]{7,64}$" })),
  },
  strict,
);
export type GitSource = Static<typeof GitSource>;

export const Resources = Type.Object(
  {
    cpu_cores: Type.Number({ exclusiveMinimum: 0 }),
    ram_mb: Type.Integer({ minimum: 1 }),
    disk_gb: Type.Integer({ minimum: 1 }),
    workers: Type.Integer({ minimum: 0 }),
  },
  strict,
);
export type Resources = Static<typeof Resources>;

/**
 * The server's reverse proxy, as the administrator set it: its image and where it gets
 * certificates. Sent with every deploy, so a changed setting reaches the proxy on the
 * next deploy of any environment of the server.
 */
export const ProxySettings = Type.Object(
  {
    image: Type.String({ minLength: 1, maxLength: 255 }),
    /** The ACME directory URL; null is the proxy's default (Let's Encrypt). */
    acme_ca: Nullable(Type.String({ pattern: "^https://", maxLength: 2048 })),
    /** PEM of the CA that signed the ACME server's own TLS certificate, when it is private. */
    acme_ca_root: Nullable(Type.String({ minLength: 1, maxLength: 65_536 })),
    /** Where the CA sends expiry notices. */
    acme_email: Nullable(Type.String({ minLength: 3, maxLength: 254, pattern: "^[^\\s@]+@[^\\s@]+$" })),
  },
  strict,
);
export type ProxySettings = Static<typeof ProxySettings>;
/** A module name as Odoo accepts it: the folder name of the module in the add-ons path. */
export const MODULE_NAME_PATTERN = "^[a-z0-9_]{1,64}$";
const ModuleName = Type.String({ pattern: MODULE_NAME_PATTERN });

/**
 * Which modules a deploy upgrades (absent: "changed"). "changed": installed custom modules
 * whose manifest version differs from the database's, or whose files changed since their last
 * successful upgrade; "all": every installed module (`-u all`); a list: those, installed by
 * the same run when they are not installed yet. New custom modules are never installed
 * unless listed.
 */
export const ModuleUpgrade = Type.Object(
  {
    upgrade: Type.Union([Type.Literal("changed"), Type.Literal("all"), Type.Array(ModuleName, { maxItems: 500 })]),
  },
  strict,
);
export type ModuleUpgrade = Static<typeof ModuleUpgrade>;

/** How a NEW database is initialised (ignored for an existing one). */
export const DatabaseInit = Type.Object(
  {
    /** Absent: true (no demo data). */
    without_demo: Type.Optional(Type.Boolean()),
    /** e.g. "fr_FR": loaded with --load-language. */
    language: Type.Optional(Type.String({ pattern: "^[a-z]{2,3}(_[A-Z]{2})?(@[a-z]+)?$" })),
    /** ISO 3166-1 alpha-2, e.g. "FR". */
    country: Type.Optional(Type.String({ pattern: "^[A-Za-z]{2}$" })),
  },
  strict,
);
export type DatabaseInit = Static<typeof DatabaseInit>;

/** Where an add-on repository is configured; also the precedence of its modules (environment first). */
export const ADDON_REPOSITORY_LEVELS = ["environment", "organization", "platform"] as const;
export type AddonRepositoryLevel = (typeof ADDON_REPOSITORY_LEVELS)[number];
/** A folder inside a repository: relative, no "..", no leading "/" or "-". */
export const ADDON_SUB_PATH_PATTERN = "^(?!-)(?!.*(?:^|/)\\.\\.?(?:/|$))[A-Za-z0-9._@+-]+(?:/[A-Za-z0-9._@+-]+)*$";

/**
 * An extra Git repository of ERP add-ons (platform, organisation or environment level),
 * checked out beside the customer's code. At most one of ssh_private_key (an OpenSSH
 * deploy key, for ssh URLs) and token (sent as HTTP basic auth to the URL's host only).
 * Sent only when the environment has add-on repositories, so an agent that predates the
 * field refuses such a deploy (strict params) instead of deploying without them.
 */
export const AddonRepository = Type.Object(
  {
    id: Uuid,
    level: LiteralUnion(ADDON_REPOSITORY_LEVELS),
    name: Type.String({ pattern: "^[A-Za-z0-9._-]{1,100}$" }),
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    branch: Type.String({ minLength: 1, maxLength: 255 }),
    /** Null: the branch head when the agent clones; the deployment records what that was. */
    commit: Nullable(Type.String({ pattern: "^[0-9a-f]{7,64}$" })),
    submodules: Type.Boolean(),
    /** Folders to look for modules in; empty: the whole repository. */
    paths: Type.Array(Type.String({ pattern: ADDON_SUB_PATH_PATTERN, maxLength: 255 }), { maxItems: 20 }),
    ssh_private_key: Type.Optional(Type.String({ minLength: 1, maxLength: 16_384 })),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: "^[^\\r\\n]+$" })),
  },
  strict,
);
export type AddonRepository = Static<typeof AddonRepository>;
/** Most add-on repositories one deploy carries (all levels together). */
export const MAX_DEPLOY_ADDON_REPOSITORIES = 60;

/** A path on the control plane's origin (the agent's own control plane URL), never another host. */
const ControlPlanePath = Type.String({ pattern: "^/(?!/)[A-Za-z0-9_.~/-]*$", maxLength: 1024 });

const BackupFileSum = Type.Object(
  { name: Type.String({ pattern: "^[a-z0-9][a-z0-9._-]{0,63}$" }), size: Type.Integer({ minimum: 0 }), sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }) },
  strict,
);

/**
 * An ERP backup as the vendor's tools make it (a zip with dump.sql, manifest.json and
 * filestore/, a tar or tar.gz with a SQL dump, or a plain SQL file): one file the agent
 * fetches from the control plane's store at GET <control plane URL>`path`/<file.name> and
 * checks against the signed size and sha256. With `neutralize`, the copy is neutralised by
 * the image's own `odoo neutralize` and re-keyed (new database.uuid and database.secret,
 * web.base.url of the environment's domain) before it is served.
 */
const ErpArchive = Type.Object(
  {
    path: ControlPlanePath,
    expires_at: Timestamp,
    file: BackupFileSum,
    /** A copy that is not production. Absent: false. */
    neutralize: Type.Optional(Type.Boolean()),
  },
  strict,
);

export const DeployParams = Type.Object(
  {
    deployment_id: Uuid,
    environment_id: Uuid,
    erp_version: Type.String({ minLength: 1, maxLength: 32 }),
    image: Type.String({ minLength: 1 }),
    /** Null runs the image as is, without a customer repository. */
    git: Nullable(GitSource),
    resources: Resources,
    /** The host name the ERP is served at; null leaves it unrouted (reachable on the server only). */
    domain: Nullable(Hostname),
    /** More host names served like `domain` (absent: none). */
    aliases: Type.Optional(Type.Array(Hostname, { maxItems: MAX_DOMAIN_ALIASES })),
    /** Absent: the agent keeps the proxy settings it last received, or its defaults. */
    proxy: Type.Optional(ProxySettings),
    env: Type.Record(Type.String({ pattern: ENV_NAME_PATTERN }), Type.String(), strict),
    /** PostgreSQL image of the environment's database; the agent uses "postgres:16" when absent. */
    db_image: Type.Optional(Type.String({ minLength: 1 })),
    /** Module installs and upgrades of this deploy; absent: { upgrade: "changed" }. */
    modules: Type.Optional(ModuleUpgrade),
    /** First start of a new database; absent: defaults (no demo data). */
    init: Type.Optional(DatabaseInit),
    /**
     * The ERP's master password (admin_passwd in odoo.conf). Absent: the agent generates one
     * per environment once and keeps it (0600) in the environment's folder.
     */
    admin_passwd: Type.Optional(Type.String({ minLength: 12, maxLength: 256, pattern: "^[^\\r\\n]+$" })),
    /**
     * The administrator's login password to set in the database (user id 2, login admin),
     * hashed by the agent as the ERP stores it; `version` comes back in the result's
     * admin_login once set. Absent: the database's passwords are left as they are.
     */
    admin_login: Type.Optional(
      Type.Object(
        {
          password: Type.String({ minLength: 12, maxLength: 256, pattern: "^[^\\r\\n]+$" }),
          version: Type.String({ minLength: 1, maxLength: 64 }),
        },
        strict,
      ),
    ),
    /** Add-on repositories, environment level first; absent: none (see AddonRepository). */
    addon_repositories: Type.Optional(Type.Array(AddonRepository, { maxItems: MAX_DEPLOY_ADDON_REPOSITORIES })),
    /**
     * A migration's backup to restore as the environment's database and file store in this
     * deploy (platform spec 4.3 and 4.1's restore-once rule), instead of initialising a new
     * database; an existing database is replaced (force_restore) only once the copy is loaded
     * and verified, and put back if the deploy fails. The result then carries
     * `migration_restore`; logs of step starting_container carry data.migration_step (see
     * MIGRATION_RESTORE_PHASES) as each phase begins.
     */
    archive: Type.Optional(Type.Object({ migration_id: Uuid, ...ErpArchive.properties }, strict)),
  },
  strict,
);
export type DeployParams = Static<typeof DeployParams>;

/**
 * An environment's names changed (domain or aliases set through an API): its route in the
 * server's proxy is replaced at once, without a deploy. An environment not deployed on the
 * server is left alone (its first deploy routes it); a stopped one keeps its maintenance page.
 */
export const RouteParams = Type.Object(
  {
    environment_id: Uuid,
    /** Null removes the environment's route. */
    domain: Nullable(Hostname),
    aliases: Type.Optional(Type.Array(Hostname, { maxItems: MAX_DOMAIN_ALIASES })),
    proxy: Type.Optional(ProxySettings),
  },
  strict,
);
export type RouteParams = Static<typeof RouteParams>;

/** restart, start and stop: the operation's deployment row and its environment. */
export const LifecycleParams = Type.Object({ deployment_id: Uuid, environment_id: Uuid }, strict);
export type LifecycleParams = Static<typeof LifecycleParams>;

export const DestroyParams = Type.Object(
  { deployment_id: Uuid, environment_id: Uuid, delete_data: Type.Boolean() },
  strict,
);
export type DestroyParams = Static<typeof DestroyParams>;

/**
 * backup: which backup to write; with `upload`, each file goes to the control plane's backup
 * store as soon as it is written: PUT <control plane URL><path>/<name>, Authorization: Bearer
 * <token> (good for this backup only, until expires_at). A failed upload fails the backup.
 */
export const BackupParams = Type.Object(
  {
    deployment_id: Uuid,
    environment_id: Uuid,
    backup_id: Uuid,
    upload: Type.Optional(Type.Object({ path: ControlPlanePath, token: Type.String({ pattern: "^[A-Za-z0-9._-]{1,512}$" }), expires_at: Timestamp }, strict)),
  },
  strict,
);
export type BackupParams = Static<typeof BackupParams>;

/**
 * restore: which backup to read. With `source` (a backup in the control plane's store, of
 * this environment or another of the organisation), the agent restores from its own copy
 * when it has one that matches `files`, else it fetches each file from GET <control plane
 * URL><path>/<name> and checks its size and sha256 against `files` (signed, so authentic).
 */
export const RestoreParams = Type.Object(
  {
    deployment_id: Uuid,
    environment_id: Uuid,
    backup_id: Uuid,
    source: Type.Optional(
      Type.Object({ environment_id: Uuid, path: ControlPlanePath, expires_at: Timestamp, files: Type.Array(BackupFileSum, { minItems: 1, maxItems: 8 }) }, strict),
    ),
    /**
     * Instead of a backup Berth made: an ERP backup as the vendor's tools make it (see
     * ErpArchive); `backup_id` then names the upload (a migration).
     */
    archive: Type.Optional(ErpArchive),
    /**
     * The restore makes a copy (a backup of another environment): before it serves, the
     * image's own `odoo neutralize` runs on it and it is re-keyed (new database.uuid and
     * database.secret, web.base.url = `base_url`, or Odoo's default when null). Absent: the
     * environment's own data, restored as it was.
     */
    copy: Type.Optional(Type.Object({ base_url: Nullable(Type.String({ pattern: "^https://[^\\s'\"\\\\]+$", maxLength: 300 })) }, strict)),
  },
  strict,
);
export type RestoreParams = Static<typeof RestoreParams>;

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
