// Parameters of the commands that (re)build an environment or change its names: deploy and
// redeploy (DeployParams) and route, with the pieces they are made of (a Git source,
// resources, the proxy's settings, module upgrades, database initialisation, add-on
// repositories). The control plane's API schemas reuse these patterns (one rule, one place).
import { Type, type Static } from "typebox";
import { LiteralUnion, Nullable, Uuid } from "./fields.ts";
import { ErpArchive } from "./data-params.ts";
import { DeployTests } from "./module-tests.ts";

// Parameter schemas reject unknown fields: an agent that silently ignored an instruction
// it does not understand (a new flag, say) would do something other than what was signed.
const strict = { additionalProperties: false } as const;

/** A lowercase host name of two labels or more: what the proxy routes and certifies. */
export const HOSTNAME_PATTERN =
  "^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$";
const Hostname = Type.String({ pattern: HOSTNAME_PATTERN });
/** A domain's aliases beside it; each is routed and certified like the domain. */
export const MAX_DOMAIN_ALIASES = 10;
/** An environment variable's name as the deploy command carries it. */
export const ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$";

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

/** A language as the ERP loads it, e.g. "fr_FR" or "sr@latin". */
export const LANGUAGE_PATTERN = "^[a-z]{2,3}(_[A-Z]{2})?(@[a-z]+)?$";
/** A country's ISO 3166-1 alpha-2 code, either case. */
export const COUNTRY_PATTERN = "^[A-Za-z]{2}$";

/** How a NEW database is initialised (ignored for an existing one). */
export const DatabaseInit = Type.Object(
  {
    /** Absent: true (no demo data). */
    without_demo: Type.Optional(Type.Boolean()),
    /** e.g. "fr_FR": loaded with --load-language. */
    language: Type.Optional(Type.String({ pattern: LANGUAGE_PATTERN })),
    /** ISO 3166-1 alpha-2, e.g. "FR". */
    country: Type.Optional(Type.String({ pattern: COUNTRY_PATTERN })),
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
    /** Run the installed and upgraded modules' tests (module-tests.ts); absent: none run, so an agent that predates it is never asked. */
    tests: Type.Optional(DeployTests),
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
    /**
     * True for a staging or development environment: odoo.conf sends the ERP's mail to the
     * server's catcher with the environment's own credentials, and it reaches nobody. Absent
     * (production): odoo.conf names no mail server.
     */
    catch_mail: Type.Optional(Type.Boolean()),
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
