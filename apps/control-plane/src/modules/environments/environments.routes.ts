// Public API routes for environments (named in public spec 4.5; shapes designed here).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { MAX_DOMAIN_ALIASES } from "@berth/protocol";
import { errors, IdParams, Nullable, Page, PageQuery, StringEnum, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { CLAIM_STATES } from "./domain-claims.repo.ts";
import { CertificateView, DnsView } from "../routing/routing-view.ts";
import { keyActorOf, scopeOf } from "../api-keys/key-principal.ts";
import type { EnvironmentsService } from "./environments.service.ts";
import { LastBackup } from "../backups/last-backup.ts";
import { OTHER_STAGES, STAGES } from "./stages.ts";

const STAGE_RULES =
  "production: the project's live ERP, at most one per project; staging: a copy to try changes on; development: a branch under work. " +
  "Staging and development change into each other by PATCH; an environment becomes production only by POST …/promote, which says what the previous production becomes.";

const RequirePassingTestsView = Type.Boolean({
  description: "A staging environment's deploy runs the modules' tests and is refused when one fails (PATCH to change; applies while the environment is staging)",
});

const RefreshOnPushView = Type.Boolean({
  description:
    "A push to its branch first refreshes it from the project's production environment (copy-from, backup fresh: production's data, neutralised), " +
    "then deploys the pushed commit; a refresh that fails deploys nothing. PATCH to change; applies while the environment is staging",
});

/** An environment's stage as every view shows it. */
export const StageView = StringEnum(STAGES, { description: STAGE_RULES });

/** POST …/promote's body (both APIs). */
export const PromoteEnvironment = Type.Object(
  {
    previous_stage: Type.Optional(
      StringEnum(OTHER_STAGES, {
        description: "What the project's current production becomes. Required while the project has another production environment (400 `previous_stage_required`)",
      }),
    ),
  },
  { additionalProperties: false },
);

/** A route hook: a POST …/promote without a body is one with no previous_stage. */
export async function emptyBodyIsNoPreviousStage(request: { body: unknown }): Promise<void> {
  if (request.body === undefined || request.body === null) request.body = {};
}

/** A host name as a caller writes it; the service checks it (invalid_domain) and stores it lowercase. */
const HostnameInput = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: "A host name of two labels or more (e.g. erp.example.com), any case, stored lowercase; not an IP address, a wildcard or a name ending in a dot (400 invalid_domain)",
});
const AliasesInput = Type.Array(HostnameInput, {
  maxItems: MAX_DOMAIN_ALIASES,
  description: `More host names served like the domain, each certified: at most ${MAX_DOMAIN_ALIASES}, no repeats, none equal to the domain`,
});

/** Where an environment is served and how its route in its server's proxy stands (both APIs' environment views). */
export const EnvironmentAddress = {
  aliases: Type.Array(Type.String(), { description: "More host names served like the domain (lowercase)" }),
  url: Nullable(
    Type.String({
      description:
        "https:// and the domain, else the name Berth generated under the installation's base domain (BERTH_BASE_DOMAIN); null when the environment has neither",
    }),
  ),
  certificate: CertificateView,
  dns: DnsView,
};

export const Environment = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    server_id: Nullable(Uuid),
    name: Type.String(),
    status: Type.String({ description: "pending (never deployed), deploying, running, stopped or error" }),
    stage: StageView,
    require_passing_tests: RequirePassingTestsView,
    refresh_on_push: RefreshOnPushView,
    git_branch: Type.String(),
    auto_deploy: Type.Boolean(),
    domain: Nullable(
      Type.String({
        description:
          "The host name it is served at (lowercase); null: its generated name, if the installation has a base domain. Destroying the environment gives it up.",
      }),
    ),
    cpu_cores: Type.Integer(),
    ram_mb: Type.Integer(),
    disk_gb: Type.Integer(),
    workers: Type.Integer(),
    is_active: Type.Boolean(),
    container_id: Nullable(Type.String()),
    container_name: Nullable(Type.String()),
    migration_id: Nullable(Uuid),
    migration_restore_completed: Type.Boolean(),
    migration_restore_completed_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
    ...EnvironmentAddress,
    last_backup: LastBackup,
  },
  { $id: "Environment", title: "Environment" },
);
const EnvironmentRef = refTo(Environment);

/** POST …/promote's answer (both APIs): the new production, and what became of the previous one. */
export const PromotionOutcome = Type.Object({
  environment: EnvironmentRef,
  previous: Nullable(
    Type.Object(
      { id: Uuid, name: Type.String(), stage: StringEnum(OTHER_STAGES) },
      { description: "The environment that was production and the stage it took; null when the project had none, or this one already was" },
    ),
  ),
});

/** A host name of an environment and how its claim stands (domain-verification.ts). */
export const EnvironmentDomain = Type.Object(
  {
    name: Type.String(),
    status: StringEnum(CLAIM_STATES, {
      description:
        "pending: not proven yet; it does not stop another organisation that proves the name from taking it. verified: proven; the name is this " +
        "environment's alone (others get 409 `domain_taken`). released: another organisation proved the name first; it was taken out of this environment",
    }),
    verification: Type.Object(
      {
        type: Type.Literal("TXT"),
        name: Type.String({ description: "_berth-challenge.<domain>" }),
        value: Type.String({ description: "The token to publish in that TXT record" }),
      },
      {
        description:
          "How to prove the name: publish this TXT record, or point the name at the environment's server (A/AAAA = the server's public addresses), " +
          "or make it a CNAME of the environment's generated name. Checked when the name is set, every few minutes, and on POST …/verify",
      },
    ),
    alternatives: Type.Object(
      {
        addresses: Type.Array(Type.String(), {
          description:
            "A/AAAA: the name is proven when every address it resolves to is one of these, the environment's server's public addresses as its agent reported them (empty until it has)",
        }),
        cname: Nullable(
          Type.String({ description: "CNAME: the name is proven when it is an alias of this one, the environment's generated name; null when the installation has no base domain" }),
        ),
      },
      { description: "The other proofs than the TXT record: the name pointing at the environment" },
    ),
    checked_at: Nullable(Timestamp),
    verified_at: Nullable(Timestamp),
  },
  { title: "EnvironmentDomain" },
);
export const DomainParams = Type.Object({ id: Uuid, domain: Type.String({ minLength: 1, maxLength: 253 }) });


/** An environment's size: the limits its containers run with. One rule for creating and changing it. */
const SIZES = {
  cpu_cores: { minimum: 1, maximum: 64, default: 1, description: "CPU cores its containers may use" },
  ram_mb: { minimum: 256, maximum: 262144, default: 2048, description: "Memory its containers may use, in MB" },
  disk_gb: { minimum: 1, maximum: 16384, default: 20, description: "Disk for its database and files, in GB" },
  workers: { minimum: 0, maximum: 64, default: 2, description: "ERP worker processes (0: one threaded process)" },
} as const;
const size = (name: keyof typeof SIZES, withDefault: boolean) => {
  const { default: value, ...limits } = SIZES[name];
  return Type.Optional(Type.Integer(withDefault ? { ...limits, default: value } : limits));
};

export const CreateEnvironment = Type.Object(
  {
    project_id: Uuid,
    name: Type.String({ minLength: 1, maxLength: 255 }),
    stage: Type.Optional(
      StringEnum(STAGES, {
        description:
          "Defaults to production when the project has no production environment (a destroyed one counts: a deploy brings it back), else development. " +
          "production while the project has one: 409 `production_exists`, naming it",
      }),
    ),
    git_branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "Defaults to the project's default_branch" })),
    server_id: Type.Optional(
      Type.String({
        format: "uuid",
        description:
          "The server it runs on: any server of the organisation (a staging environment on another server than production, say; copies between them go through the backup store). " +
          "Defaults to the project's server. Not a server of the organisation: 400 `server_not_found`",
      }),
    ),
    domain: Type.Optional(HostnameInput),
    aliases: Type.Optional(AliasesInput),
    auto_deploy: Type.Optional(Type.Boolean({ default: false })),
    cpu_cores: size("cpu_cores", true),
    ram_mb: size("ram_mb", true),
    disk_gb: size("disk_gb", true),
    workers: size("workers", true),
  },
  { additionalProperties: false },
);

/**
 * The fields that change an environment in place (also in the platform API's environment
 * PATCH): where it is served, at once, its size, from its next deploy on, and its stage.
 */
export const EnvironmentUpdate = {
  stage: Type.Optional(
    StringEnum(STAGES, {
      description:
        "staging or development (either way, audited). production, or any change of the production environment's stage: 409 `stage_change_refused` (use POST …/promote)",
    }),
  ),
  require_passing_tests: Type.Optional(
    Type.Boolean({
      description:
        "From the next deploy on: a staging environment's deploy runs the tests of the modules it installs or upgrades and is refused (failed, rolled back, the previous release " +
        "serving) when one fails. Development environments always run them and serve anyway; production never runs them.",
    }),
  ),
  refresh_on_push: Type.Optional(
    Type.Boolean({
      description:
        "A push to its branch first refreshes it from the project's production environment, then deploys the pushed commit (as copy-from with backup fresh, " +
        "then the push's deploy; a refresh that fails deploys nothing). Applies while the environment is staging.",
    }),
  ),
  domain: Type.Optional(Nullable(HostnameInput)),
  aliases: Type.Optional(AliasesInput),
  cpu_cores: size("cpu_cores", false),
  ram_mb: size("ram_mb", false),
  disk_gb: size("disk_gb", false),
  workers: size("workers", false),
};
const UpdateEnvironment = Type.Object(EnvironmentUpdate, { additionalProperties: false, minProperties: 1 });

export function environmentsRoutes(service: EnvironmentsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/projects/:id/environments",
      {
        schema: {
          tags: ["Environments"],
          summary: "List a project's environments",
          params: IdParams,
          querystring: PageQuery,
          response: { 200: Page(EnvironmentRef), ...errors(404) },
        },
      },
      async (request) => service.listForProject(scopeOf(request), request.params.id, request.query),
    );

    app.get(
      "/environments/:id",
      { schema: { tags: ["Environments"], summary: "Get an environment", params: IdParams, response: { 200: EnvironmentRef, ...errors(404) } } },
      async (request) => service.get(scopeOf(request), request.params.id),
    );

    app.post(
      "/environments",
      {
        schema: {
          tags: ["Environments"],
          summary: "Create an environment",
          description: "Creates an environment (status pending) on the project's server. Needs a full-access key. Supports X-Idempotency-Key.",
          body: CreateEnvironment,
          response: { 201: EnvironmentRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        return reply.code(201).send(await service.create(scopeOf(request), request.body));
      },
    );

    app.patch(
      "/environments/:id",
      {
        schema: {
          tags: ["Environments"],
          summary: "Change an environment's stage, domain, aliases or size",
          description:
            "Omitted fields are left unchanged; a refused field changes nothing. `stage` moves an environment between staging and development (written to the " +
            "organisation's audit log); production is reached only by POST /environments/{id}/promote (409 `stage_change_refused`). A new size (cpu_cores, ram_mb, disk_gb, workers) is recorded at once and applies from the next deploy " +
            "(POST /environments/{id}/deploy), which the deployment's config shows; the running containers keep theirs until then. `domain: null` removes the domain (the environment is then served at its generated name, if the " +
            "installation has a base domain). A name is held by one environment once proven (see GET /environments/{id}/domains: a TXT record, or DNS " +
            "pointing at the server); another environment's verified name, or a name another environment of the same organisation has, is refused " +
            "(409 `domain_taken`), while another organisation's unproven claim is not: the first to prove the name gets it; a name under the installation's base domain other than the environment's own generated one is refused " +
            "(400 `domain_reserved`); a name that is not a host name is refused (400 `invalid_domain`). A deployed environment's server is told " +
            "at once: its proxy serves the new names without a deploy. Needs a full-access key. Like every PATCH, it accepts X-Idempotency-Key and ignores it: " +
            "repeating it sets the same values.",
          params: IdParams,
          body: UpdateEnvironment,
          response: { 200: EnvironmentRef, ...errors(404, 409) },
        },
      },
      async (request) => service.view(await service.update(scopeOf(request), request.params.id, request.body, keyActorOf(request))),
    );

    app.post(
      "/environments/:id/promote",
      {
        schema: {
          tags: ["Environments"],
          summary: "Promote an environment to production",
          description:
            "Makes the environment its project's production and the current production `previous_stage` (staging or development), in one transaction, " +
            "written to the organisation's audit log (environment.promote). previous_stage is required while the project has another production " +
            "(400 `previous_stage_required`), including a destroyed one. Promoting the production itself changes nothing. Nothing is deployed or copied. " +
            "Needs a full-access key. A destroyed environment: 400 `environment_inactive`.",
          params: IdParams,
          body: PromoteEnvironment,
          response: { 200: PromotionOutcome, ...errors(404, 409) },
        },
        preValidation: emptyBodyIsNoPreviousStage,
      },
      async (request) => service.promote(scopeOf(request), request.params.id, request.body.previous_stage, keyActorOf(request)),
    );

    app.get(
      "/environments/:id/domains",
      {
        schema: {
          tags: ["Environments"],
          summary: "List an environment's domains with their verification",
          description: "The domain and aliases, each with its claim's status and the TXT record that proves it.",
          params: IdParams,
          response: { 200: Type.Object({ data: Type.Array(EnvironmentDomain) }), ...errors(404) },
        },
      },
      async (request) => service.domains(scopeOf(request), request.params.id),
    );

    app.post(
      "/environments/:id/domains/:domain/verify",
      {
        schema: {
          tags: ["Environments"],
          summary: "Check a domain's DNS now",
          description:
            "Looks up the name's TXT _berth-challenge record, A/AAAA and CNAME now and answers the claim's status after it (verified when proven; a proof " +
            "releases other organisations' pending claims of the name). 404 when the environment does not have this name.",
          params: DomainParams,
          response: { 200: EnvironmentDomain, ...errors(404) },
        },
      },
      async (request) => service.verifyDomain(scopeOf(request), request.params.id, request.params.domain),
    );
  };
}
