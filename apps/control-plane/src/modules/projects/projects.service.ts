// Rules for projects: creation on one of the organisation's servers, partial updates,
// and the delete rules of public spec 4.3.
import type { Clock } from "../../lib/clock.ts";
import { sealClearCredentials, splitCredentials, withoutCredentials } from "../../lib/git-credentials.ts";
import { checkGitBranch, checkGitUrl } from "../../lib/git-source.ts";
import { seal } from "../../lib/master-key.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import type { Scope } from "../../lib/scope.ts";
import { scopedReads } from "../../db/keyset.ts";
import type { ServersRepo } from "../servers/servers.repo.ts";
import { assertSupportedErpVersion } from "./erp-versions.ts";
import type { ProjectRow, ProjectsRepo } from "./projects.repo.ts";

export interface CreateProjectInput {
  name: string;
  server_id: string;
  git_repo_url?: string | undefined;
  default_branch?: string | undefined;
  erp_version?: string | undefined;
  development_server_id?: string | null | undefined;
  development_limit?: number | undefined;
  /** Not an API field: the sealed userinfo of git_repo_url (given bare), from a migration. */
  git_repo_credentials_enc?: string | null | undefined;
}

export interface UpdateProjectInput {
  name?: string | undefined;
  default_branch?: string | undefined;
  git_repo_url?: string | null | undefined;
  development_server_id?: string | null | undefined;
  development_limit?: number | undefined;
}

export function projectView(p: ProjectRow) {
  return {
    id: p.id,
    name: p.name,
    erp_version: p.erpVersion,
    git_repo_url: p.gitRepoUrl === null ? null : withoutCredentials(p.gitRepoUrl),
    default_branch: p.defaultBranch,
    environment_count: p.environmentCount,
    server_id: p.serverId,
    development_server_id: p.developmentServerId,
    development_limit: p.developmentLimit,
    created_at: p.createdAt.toISOString(),
  };
}

/**
 * The columns of a repository URL, for projects and migrations alike (lib/git-source.ts's
 * rule): the bare URL, and its userinfo sealed (null when none), so it is never stored or shown in clear.
 */
export function repoColumns(masterKey: Buffer, url: string | null, field = "git_repo_url") {
  if (url === null) return { gitRepoUrl: null, gitRepoCredentialsEnc: null };
  checkGitUrl(url, { field, credentials: "allow" });
  const { url: bare, credentials } = splitCredentials(url);
  return { gitRepoUrl: bare, gitRepoCredentialsEnc: credentials === null ? null : seal(masterKey, credentials) };
}

export function createProjectsService(deps: {
  projects: ProjectsRepo;
  servers: Pick<ServersRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
  masterKey: Buffer;
}) {
  /** The development settings' columns; a development server must be a live server of the organisation. */
  async function developmentColumns(organizationId: string, input: Pick<UpdateProjectInput, "development_server_id" | "development_limit">) {
    const values: { developmentServerId?: string | null; developmentLimit?: number } = {};
    if (input.development_server_id !== undefined) {
      if (input.development_server_id !== null && !(await deps.servers.get(organizationId, input.development_server_id))) {
        throw new DomainError("development_server_invalid", "development_server_id does not name a server of this organisation (see GET /servers); null turns development environments on push off");
      }
      values.developmentServerId = input.development_server_id;
    }
    if (input.development_limit !== undefined) values.developmentLimit = input.development_limit;
    return values;
  }

  return {
    ...scopedReads({ codec: deps.cursors, list: "projects", label: "Project", repo: deps.projects, view: projectView }),
    async create(scope: Scope, input: CreateProjectInput) {
      const erpVersion = input.erp_version === undefined ? null : assertSupportedErpVersion(input.erp_version);
      if (input.default_branch !== undefined) checkGitBranch(input.default_branch, { field: "default_branch" });
      const repo: { gitRepoUrl: string | null; gitRepoCredentialsEnc: string | null } = repoColumns(deps.masterKey, input.git_repo_url ?? null);
      // A migration hands over its URL already split, with the credentials it sealed.
      if (input.git_repo_credentials_enc && repo.gitRepoCredentialsEnc === null) repo.gitRepoCredentialsEnc = input.git_repo_credentials_enc;
      const server = await deps.servers.get(scope.organizationId, input.server_id);
      if (!server) throw new DomainError("server_not_found", "server_id does not name a server of this organisation (see GET /servers)");
      const development = await developmentColumns(scope.organizationId, input);
      const row = await deps.projects.insert({
        organizationId: scope.organizationId,
        serverId: server.id,
        ...development,
        name: input.name,
        ...repo,
        defaultBranch: input.default_branch ?? "main",
        erpVersion,
        createdAt: deps.clock.now(),
        updatedAt: deps.clock.now(),
      });
      return projectView(row);
    },
    async update(scope: Scope, id: string, input: UpdateProjectInput) {
      const values: Record<string, unknown> = {};
      if (input.name !== undefined) values.name = input.name;
      if (input.default_branch !== undefined) {
        checkGitBranch(input.default_branch, { field: "default_branch" });
        values.defaultBranch = input.default_branch;
      }
      if (input.git_repo_url !== undefined) Object.assign(values, repoColumns(deps.masterKey, input.git_repo_url));
      Object.assign(values, await developmentColumns(scope.organizationId, input));
      if (Object.keys(values).length === 0) return this.get(scope, id);
      const row = await deps.projects.update(scope, id, { ...values, updatedAt: deps.clock.now() });
      if (!row) throw notFound("Project");
      return projectView(row);
    },
    /** Seals the userinfo of repository URLs written in clear before migration 0011 (run at start). */
    sealStoredCredentials(): Promise<number> {
      return sealClearCredentials(deps.projects, deps.masterKey);
    },
    async remove(scope: Scope, id: string) {
      const outcome = await deps.projects.deleteIfIdle(scope, id, deps.clock.now());
      if (outcome === "not_found") throw notFound("Project");
      if (outcome === "busy") {
        throw new DomainError("environments_running", "The project has environments that are running or deploying; stop them first");
      }
    },
  };
}
export type ProjectsService = ReturnType<typeof createProjectsService>;
