// Routes of add-on repositories, the same five at each level and surface:
// public API (API keys): /addon-repositories (the key's organisation) and
//   /environments/{id}/addon-repositories;
// platform API (sessions): /platform/addon-repositories (portal administrators),
//   /organizations/{org_id}/addon-repositories and
//   /projects/{project_id}/environments/{env_id}/addon-repositories.
// The platform level has no API-key route: API keys belong to one organisation.
import { Type, type TObject } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, StringEnum, Uuid } from "../../lib/http-schemas.ts";
import { notFound } from "../../lib/errors.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { Scope } from "../../lib/scope.ts";
import { ACCESS_KINDS, MAX_ADDON_REPOSITORIES, MAX_SUB_PATHS } from "./addon-repositories-fns.ts";
import type { AddonScope } from "./addon-repositories.repo.ts";
import type { AddonRepositoriesService, AddonRepositoryInput, AddonRepositoryPatch } from "./addon-repositories.service.ts";

const RULES =
  "git_url is https (https://host/owner/repo.git) or ssh (ssh://git@host[:port]/owner/repo.git or git@host:owner/repo.git), without credentials " +
  "(else 400 `addon_url_invalid`); branch a Git branch name (`addon_branch_invalid`); commit, when given, pins the repository to it (7 to 64 hex, " +
  "`addon_commit_invalid`), else each deploy takes the branch head and records the commit it got, which retries and rollbacks check out again; " +
  `sub_paths (at most ${MAX_SUB_PATHS}) are folders of the repository to look for modules in (\`addon_path_invalid\`); name (default: the URL's last part) ` +
  "is 1 to 100 of A-Z a-z 0-9 . _ - (`addon_name_invalid`); a repository that is one module must be named after it. Private access: " +
  '`access: "deploy_key"` (ssh URLs) makes an Ed25519 key pair whose OpenSSH public key is shown in `deploy_key.public_key` for you to add to the ' +
  'Git host as a read-only deploy key, the private key sealed at rest and never shown; `access: "token"` (https URLs) takes `token` (sent as HTTP ' +
  "basic auth to that host only; `user:token` when the host wants a user name), sealed and never shown again (`has_token`); a mismatch is " +
  "`addon_access_mismatch`, a missing token `addon_token_required`. SSH host keys are trusted on a repository's first clone and pinned for it. " +
  `At most ${MAX_ADDON_REPOSITORIES} per level (409 \`addon_repository_limit_reached\`). Modules are looked for in the environment's code first, then ` +
  "its own add-on repositories, then the organisation's, then the platform's, then the image's (the first module of a name wins). Changes reach " +
  "the ERP at the next deploy.";

const DeployKey = Type.Object(
  {
    public_key: Type.String({ description: "OpenSSH public key (ssh-ed25519 …): add it to the Git host as a read-only deploy key" }),
    fingerprint: Type.String({ description: "SHA256:… as ssh-keygen -l prints it" }),
  },
  { title: "AddonDeployKey" },
);

const AddonRepository = Type.Object(
  {
    id: Uuid,
    level: StringEnum(["platform", "organization", "environment"] as const),
    organization_id: Nullable(Uuid),
    environment_id: Nullable(Uuid),
    name: Type.String(),
    git_url: Type.String(),
    branch: Type.String(),
    commit: Nullable(Type.String({ description: "The pinned commit; null: the branch head at each deploy" })),
    submodules: Type.Boolean(),
    sub_paths: Type.Array(Type.String()),
    access: StringEnum(ACCESS_KINDS),
    deploy_key: Nullable(DeployKey),
    has_token: Type.Boolean({ description: "A token is stored (never shown)" }),
    auto_deploy: Type.Boolean(),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { title: "AddonRepository" },
);
const AddonRepositoryList = Type.Object({ data: Type.Array(AddonRepository), total: Type.Integer() }, { title: "AddonRepositories" });

const fields = {
  name: Type.String({ maxLength: 200 }),
  commit: Nullable(Type.String({ maxLength: 100 })),
  submodules: Type.Boolean({ description: "Check out the submodules too (with the same access); default false" }),
  sub_paths: Type.Array(Type.String({ maxLength: 300 }), { maxItems: 100 }),
  access: StringEnum(ACCESS_KINDS, { description: "public (default), deploy_key (ssh) or token (https)" }),
  token: Type.String({ maxLength: 8192, description: "Sealed at rest, never shown again" }),
  auto_deploy: Type.Boolean({ description: "Environment level: a push to this repository and branch deploys the environment (default true)" }),
};
/** What both create and update may set beyond the URL and branch. */
const optionalFields = {
  name: Type.Optional(fields.name),
  commit: Type.Optional(fields.commit),
  submodules: Type.Optional(fields.submodules),
  sub_paths: Type.Optional(fields.sub_paths),
  access: Type.Optional(fields.access),
  token: Type.Optional(fields.token),
  auto_deploy: Type.Optional(fields.auto_deploy),
};
const GitUrl = Type.String({ maxLength: 4096 });
const Branch = Type.String({ maxLength: 300 });
const CreateBody = Type.Object({ git_url: GitUrl, branch: Branch, ...optionalFields }, { additionalProperties: false, title: "AddonRepositoryCreate" });
const PatchBody = Type.Object(
  {
    git_url: Type.Optional(GitUrl),
    branch: Type.Optional(Branch),
    ...optionalFields,
    regenerate_deploy_key: Type.Optional(Type.Boolean({ description: "Replace the deploy key with a new one (access deploy_key)" })),
  },
  { additionalProperties: false, title: "AddonRepositoryUpdate" },
);

type Req = { params: Record<string, string> };

function addonRoutes(
  service: AddonRepositoriesService,
  base: string,
  params: TObject,
  scope: (request: Req, write: boolean) => Promise<AddonScope>,
  opts: { tags: string[]; what: string; read: string; write: string; config?: Record<string, unknown> },
): FastifyPluginAsyncTypebox {
  const withId = Type.Object({ ...params.properties, addon_id: Uuid });
  const config = opts.config ?? {};
  return async (app) => {
    app.get(
      `${base}/addon-repositories`,
      { schema: { tags: opts.tags, summary: `List ${opts.what} add-on repositories`, description: `Oldest first. ${opts.read}`, params, response: { 200: AddonRepositoryList, ...errors(404) } } },
      async (request) => service.list(await scope(request as never, false)),
    );
    app.post(
      `${base}/addon-repositories`,
      {
        config,
        schema: {
          tags: opts.tags,
          summary: `Add ${opts.what} add-on repository`,
          description: `${RULES} ${opts.write}`,
          params,
          body: CreateBody,
          response: { 201: AddonRepository, ...errors(404, 409) },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(await scope(request as never, true), request.body as AddonRepositoryInput)),
    );
    app.get(
      `${base}/addon-repositories/:addon_id`,
      { schema: { tags: opts.tags, summary: `Get ${opts.what} add-on repository`, description: opts.read, params: withId, response: { 200: AddonRepository, ...errors(404) } } },
      async (request) => service.get(await scope(request as never, false), (request.params as { addon_id: string }).addon_id),
    );
    app.patch(
      `${base}/addon-repositories/:addon_id`,
      {
        config,
        schema: {
          tags: opts.tags,
          summary: `Change ${opts.what} add-on repository`,
          description: `Fields not given stay. Changing access to deploy_key (or regenerate_deploy_key) makes a new key; to public forgets the key or token. ${RULES} ${opts.write}`,
          params: withId,
          body: PatchBody,
          response: { 200: AddonRepository, ...errors(404) },
        },
      },
      async (request) => service.update(await scope(request as never, true), (request.params as { addon_id: string }).addon_id, request.body as AddonRepositoryPatch),
    );
    app.delete(
      `${base}/addon-repositories/:addon_id`,
      {
        config,
        schema: {
          tags: opts.tags,
          summary: `Remove ${opts.what} add-on repository`,
          description: `Its key or token is deleted with it; the ERP loses its modules at the next deploy. ${opts.write}`,
          params: withId,
          response: { 204: Type.Null(), ...errors(404) },
        },
      },
      async (request, reply) => {
        await service.remove(await scope(request as never, true), (request.params as { addon_id: string }).addon_id);
        return reply.code(204).send(null);
      },
    );
  };
}

async function environmentScope(environments: Pick<EnvironmentsRepo, "get">, at: Scope, environmentId: string): Promise<AddonScope> {
  const env = await environments.get(at, environmentId);
  if (!env) throw notFound("Environment");
  return { level: "environment", organizationId: env.organizationId, environmentId: env.id };
}

/** Public API: the key's organisation (writes need an organisation-wide full-access key) and its environments. */
export function addonRepositoriesPublicRoutes(deps: { addonRepositories: AddonRepositoriesService; environments: Pick<EnvironmentsRepo, "get"> }): FastifyPluginAsyncTypebox {
  return async (app) => {
    await app.register(
      addonRoutes(deps.addonRepositories, "", Type.Object({}), async (request) => ({ level: "organization", organizationId: scopeOf(request as never).organizationId }), {
        tags: ["Add-on repositories"],
        what: "the organisation's",
        read: "Any key of the organisation. Deployed to every environment of the organisation.",
        write: "Needs an organisation-wide full-access key. Supports X-Idempotency-Key.",
        config: { orgScoped: true },
      }),
    );
    await app.register(
      addonRoutes(deps.addonRepositories, "/environments/:id", IdParams, async (request) => environmentScope(deps.environments, scopeOf(request as never), request.params.id!), {
        tags: ["Add-on repositories"],
        what: "an environment's",
        read: "Any key of the environment's organisation or project.",
        write: "Needs a full-access key. Supports X-Idempotency-Key.",
      }),
    );
  };
}

/** Platform API: the platform's (portal administrators), an organisation's (organisation admins and up) and an environment's (project admins and up). */
export function addonRepositoriesPlatformRoutes(deps: {
  addonRepositories: AddonRepositoriesService;
  access: Pick<Access, "requireProject" | "requireOrg" | "requirePortal">;
  environments: Pick<EnvironmentsRepo, "get">;
}): FastifyPluginAsyncTypebox {
  const tags = ["Add-on repositories"];
  return async (app) => {
    await app.register(
      addonRoutes(
        deps.addonRepositories,
        "/platform",
        Type.Object({}),
        async (request) => {
          deps.access.requirePortal(personOf(request as never), "platform.addon_repositories.manage");
          return { level: "platform" };
        },
        { tags, what: "the platform's", read: "Portal administrators only.", write: "Portal administrators only. Deployed to every environment of the installation." },
      ),
    );
    await app.register(
      addonRoutes(
        deps.addonRepositories,
        "/organizations/:org_id",
        Type.Object({ org_id: Uuid }),
        async (request, write) => {
          const organizationId = request.params.org_id!;
          await deps.access.requireOrg(personOf(request as never), organizationId, write ? "org.addon_repositories.manage" : "org.view");
          return { level: "organization", organizationId };
        },
        { tags, what: "an organisation's", read: "Needs org.view.", write: "Needs org.addon_repositories.manage (organisation admins and owners)." },
      ),
    );
    await app.register(
      addonRoutes(
        deps.addonRepositories,
        "/projects/:project_id/environments/:env_id",
        Type.Object({ project_id: Uuid, env_id: Uuid }),
        async (request) => {
          const projectId = request.params.project_id!;
          const a = await deps.access.requireProject(personOf(request as never), projectId, "project.environments.update", "Environment");
          return environmentScope(deps.environments, { organizationId: a.organizationId, projectId }, request.params.env_id!);
        },
        { tags, what: "an environment's", read: "Needs project.environments.update.", write: "Needs project.environments.update." },
      ),
    );
  };
}
