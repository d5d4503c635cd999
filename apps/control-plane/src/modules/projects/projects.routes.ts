// Public API routes for projects (public spec 4.3).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { DomainError } from "../../lib/errors.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import type { ProjectsService } from "./projects.service.ts";

const DEVELOPMENT_SERVER =
  "The server a push to a branch that has no environment in the project creates a development environment on (stage development, named after the branch, " +
  "deploying on push, sized like production); null (the default): pushes create none. A server of another organisation, or none: 422 `development_server_invalid`";
const DEVELOPMENT_LIMIT =
  "At most this many of the project's development environments run at once (1 to 20, default 3). A push that would create one more stops the oldest idle one " +
  "(running, no operation queued or in progress, least recently deployed) with a stop operation, never destroying it; when none is idle the new one is not created";
const DevelopmentLimit = Type.Integer({ minimum: 1, maximum: 20, description: DEVELOPMENT_LIMIT });

export const Project = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    erp_version: Nullable(Type.String({ examples: ["17.0"] })),
    git_repo_url: Nullable(
      Type.String({
        description:
          "URL of the Git repository (https or ssh), always without credentials: a URL written with them (https://user:token@host/…) is shown " +
          "with the user:token@ part removed (https://host/…). The credentials are kept sealed and used only to clone during a deployment.",
      }),
    ),
    default_branch: Nullable(Type.String()),
    environment_count: Type.Integer({ description: "Number of active environments" }),
    server_id: Nullable(Uuid),
    development_server_id: Nullable(Type.String({ format: "uuid", description: DEVELOPMENT_SERVER })),
    development_limit: DevelopmentLimit,
    created_at: Timestamp,
  },
  { $id: "Project", title: "Project" },
);

const RepoUrl = Type.String({ minLength: 1, maxLength: 2048, description:
    "Git repository URL: https (https://host/owner/repo.git) or ssh (ssh://git@host[:port]/owner/repo.git or git@host:owner/repo.git); anything else " +
    "(file://, a local path, http://, git://, ext::, a leading -) is refused with 400 `git_url_invalid`. Credentials may be written into an https URL " +
    "(https://user:token@host/…): they are stored sealed, used only to clone, and never shown again (responses carry the URL without them). Writing the " +
    "URL again replaces them; a URL without credentials removes them.",
});
const Name = Type.String({ minLength: 1, maxLength: 255 });
const Branch = Type.String({ minLength: 1, maxLength: 255, description: "A Git branch name (git check-ref-format), never starting with -; else 400 `git_branch_invalid`" });

export const CreateProject = Type.Object(
  {
    name: Name,
    server_id: Uuid,
    git_repo_url: Type.Optional(RepoUrl),
    default_branch: Type.Optional(Branch),
    erp_version: Type.Optional(Type.String({ maxLength: 32, examples: ["17.0"] })),
    development_server_id: Type.Optional(Nullable(Type.String({ format: "uuid", description: DEVELOPMENT_SERVER }))),
    development_limit: Type.Optional(DevelopmentLimit),
  },
  { additionalProperties: false },
);

export const UpdateProject = Type.Object(
  {
    name: Type.Optional(Name),
    default_branch: Type.Optional(Branch),
    git_repo_url: Type.Optional(Nullable(RepoUrl)),
    development_server_id: Type.Optional(Nullable(Type.String({ format: "uuid", description: DEVELOPMENT_SERVER }))),
    development_limit: Type.Optional(DevelopmentLimit),
  },
  { additionalProperties: false },
);

const ProjectRef = refTo(Project);

export function projectsRoutes(service: ProjectsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/projects",
      {
        schema: {
          tags: ["Projects"],
          summary: "List projects",
          description: "Active projects of the organisation, newest first. A project-scoped key sees only its project.",
          querystring: PageQuery,
          response: { 200: Page(ProjectRef), ...errors() },
        },
      },
      async (request) => service.list(scopeOf(request), request.query),
    );

    app.post(
      "/projects",
      {
        config: { orgScoped: true },
        schema: {
          tags: ["Projects"],
          summary: "Create a project",
          description: "Needs a full-access, organisation-scoped key. Supports X-Idempotency-Key.",
          body: CreateProject,
          response: { 201: ProjectRef, ...errors(409, 422) },
        },
      },
      async (request, reply) => {
        return reply.code(201).send(await service.create(scopeOf(request), request.body));
      },
    );

    app.get(
      "/projects/:id",
      { schema: { tags: ["Projects"], summary: "Get a project", params: IdParams, response: { 200: ProjectRef, ...errors(404) } } },
      async (request) => service.get(scopeOf(request), request.params.id),
    );

    app.patch(
      "/projects/:id",
      {
        schema: {
          tags: ["Projects"],
          summary: "Update a project",
          description: "Omitted fields are left unchanged. Needs a full-access key. A development_server_id that is not a server of the organisation: 422 `development_server_invalid`.",
          params: IdParams,
          body: UpdateProject,
          response: { 200: ProjectRef, ...errors(404, 422) },
        },
      },
      async (request) => {
        return service.update(scopeOf(request), request.params.id, request.body ?? {});
      },
    );

    app.delete(
      "/projects/:id",
      {
        config: { orgScoped: true },
        schema: {
          tags: ["Projects"],
          summary: "Delete a project",
          description:
            "Soft-deletes the project. Needs a full-access, organisation-scoped key and the header `X-Confirm-Delete: true`. " +
            "Refused with 409 environments_running while an environment is running or deploying.",
          params: IdParams,
          headers: Type.Object({ "x-confirm-delete": Type.Optional(Type.String()) }),
          response: { 204: Type.Null({ description: "Deleted" }), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        if (request.headers["x-confirm-delete"] !== "true") {
          throw new DomainError("confirm_required", "Deleting a project needs the header X-Confirm-Delete: true");
        }
        await service.remove(scopeOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
