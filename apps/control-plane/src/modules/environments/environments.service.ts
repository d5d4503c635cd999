// Rules for environments: created inside a visible project, on the project's server,
// with a name unique among the project's active environments and a stage (stages.ts: one
// production per project); their domain and aliases (domains.ts) held by one active
// environment of the whole installation at a time.
import { randomUUID } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { checkGitBranch } from "../../lib/git-source.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound, isUniqueViolation } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import type { ServersRepo } from "../servers/servers.repo.ts";
import type { ProjectsRepo } from "../projects/projects.repo.ts";
import { certificateView, dnsView, type StoredRouting } from "../routing/routing-view.ts";
import { checkDomains, type DomainsInput, type EnvironmentAddresses } from "./domains.ts";
import type { Claimed, EnvironmentRow, EnvironmentsRepo, StageAudit } from "./environments.repo.ts";
import { checkStageChange, previousStageOf, stageOfNew, type OtherStage, type Stage } from "./stages.ts";
import type { StageSettings } from "./stage-builds.ts";
import type { ClaimState, DomainClaimRow } from "./domain-claims.repo.ts";
import { challengeName, type DomainVerification, type ProofTarget } from "./domain-verification.ts";
import { lastBackupView } from "../backups/last-backup.ts";

/** An environment's size (the limits of its containers); see environments.routes.ts for the bounds. */
export interface EnvironmentSize {
  cpu_cores?: number | undefined;
  ram_mb?: number | undefined;
  disk_gb?: number | undefined;
  workers?: number | undefined;
}

/** Who changes a stage, for the audit log: a person, or an API key (named in the entry's summary). */
export interface StageActor {
  userId: string | null;
  apiKeyId: string | null;
}

export interface CreateEnvironmentInput extends EnvironmentSize {
  project_id: string;
  name: string;
  /** Absent: production when the project has none, else development. */
  stage?: Stage | undefined;
  git_branch?: string | undefined;
  domain?: string | undefined;
  aliases?: string[] | undefined;
  auto_deploy?: boolean | undefined;
  /** Set only by a migration's start (step 2): the first deployment restores its backup. */
  migration_id?: string | undefined;
  /** A server of the organisation other than the project's (checked here; a push's development environment: its project's development server). */
  server_id?: string | undefined;
}

/** What the APIs show of where an environment is served and how its route stands. */
export function addressView(e: { id: string; name: string; domain: string | null; aliases: string[]; routing: unknown }, addresses: EnvironmentAddresses) {
  const routing = e.routing as StoredRouting | null;
  return {
    aliases: e.aliases,
    url: addresses.url(e),
    certificate: certificateView(routing),
    dns: dnsView(routing, addresses.hostname(e)),
  };
}

export function environmentView(e: EnvironmentRow, addresses: EnvironmentAddresses) {
  return {
    id: e.id,
    project_id: e.projectId,
    server_id: e.serverId,
    name: e.name,
    status: e.status,
    stage: e.stage,
    require_passing_tests: e.requirePassingTests,
    refresh_on_push: e.refreshOnPush,
    git_branch: e.gitBranch,
    auto_deploy: e.autoDeploy,
    domain: e.domain,
    cpu_cores: e.cpuCores,
    ram_mb: e.ramMb,
    disk_gb: e.diskGb,
    workers: e.workers,
    is_active: e.isActive,
    container_id: e.containerId,
    container_name: e.containerName,
    migration_id: e.migrationId,
    migration_restore_completed: e.migrationRestoreCompleted,
    migration_restore_completed_at: e.migrationRestoreCompletedAt?.toISOString() ?? null,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
    ...addressView(e, addresses),
    last_backup: lastBackupView(e.lastBackup),
  };
}

/** A claimed name as the APIs show it: its status, the TXT record that proves it, and what else would (`target`). */
export function domainView(c: DomainClaimRow, target: ProofTarget | null) {
  return {
    name: c.name,
    status: c.status as ClaimState,
    verification: { type: "TXT" as const, name: challengeName(c.name), value: c.token },
    alternatives: { addresses: target?.publicAddresses ?? [], cname: target?.generatedName ?? null },
    checked_at: c.checkedAt?.toISOString() ?? null,
    verified_at: c.verifiedAt?.toISOString() ?? null,
  };
}

const inactive = () => new DomainError("environment_inactive", "The environment is not active (it was destroyed); deploy it again first");

/** The row of a claim, or domain_taken naming the name (never who holds it). */
function claimed(out: Claimed): EnvironmentRow {
  if (out.taken !== undefined) throw new DomainError("domain_taken", `${out.taken} is already served by another environment`);
  return out.row;
}

/** An audit entry of a stage change: the actor's user, or the API key named in the summary. */
function stageAudit(organizationId: string, actor: StageActor | undefined, action: string, summary: string): StageAudit {
  const by = actor?.apiKeyId ? ` (by API key ${actor.apiKeyId})` : "";
  return { organizationId, actorUserId: actor?.userId ?? null, action, summary: `${summary}${by}` };
}

export function createEnvironmentsService(deps: {
  environments: EnvironmentsRepo;
  projects: Pick<ProjectsRepo, "get">;
  servers: Pick<ServersRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
  addresses: EnvironmentAddresses;
  /** Tells the environment's server its new names (the dispatcher's route command). */
  onNamesChanged?: (row: EnvironmentRow) => Promise<void>;
  /** Proves claims from DNS (domain-verification.ts) when they are made and on demand; absent: claims stay pending. */
  verification?: Pick<DomainVerification, "check" | "targetOf">;
  /** The claims of environments (domain-claims.repo.ts). */
  claims?: (environmentIds: string[]) => Promise<DomainClaimRow[]>;
}) {
  /** Checks the environment's pending claims at once (a claim whose DNS is ready is verified before the answer). */
  async function verifyNow(environmentId: string): Promise<void> {
    if (!deps.verification || !deps.claims) return;
    await deps.verification.check(await deps.claims([environmentId]));
  }

  const view = (row: EnvironmentRow) => environmentView(row, deps.addresses);
  /**
   * Sets an active environment's domain (null: none, it is served at its generated name)
   * and aliases; omitted fields stay as they are. A deployed environment's server is told
   * at once (its proxy routes the new names without a deploy).
   */
  async function updateDomains(scope: Scope, id: string, input: DomainsInput): Promise<EnvironmentRow> {
    const row = await deps.environments.get(scope, id);
    if (!row) throw notFound("Environment");
    if (!row.isActive) throw inactive();
    const out = await deps.environments.setDomains(row.id, checkDomains(row, input, deps.addresses.baseDomain), deps.clock.now());
    if (!out) throw inactive();
    const updated = claimed(out);
    await verifyNow(updated.id);
    const before = [row.domain, ...row.aliases].join(" ");
    if ([updated.domain, ...updated.aliases].join(" ") !== before) await deps.onNamesChanged?.(updated);
    return updated;
  }

  return {
    async get(scope: Scope, id: string) {
      const row = await deps.environments.get(scope, id);
      if (!row) throw notFound("Environment");
      return view(row);
    },
    async listForProject(scope: Scope, projectId: string, page: PageRequest) {
      const project = await deps.projects.get(scope, projectId);
      if (!project) throw notFound("Project");
      return listPage(deps.cursors, `environments:${projectId}`, page, (limit, after) => deps.environments.listForProject(projectId, limit, after), view);
    },
    async create(scope: Scope, input: CreateEnvironmentInput) {
      const project = await deps.projects.get(scope, input.project_id);
      if (!project) throw notFound("Project");
      if (input.git_branch !== undefined) checkGitBranch(input.git_branch, { field: "git_branch" });
      if (input.server_id !== undefined && input.server_id !== project.serverId && !(await deps.servers.get(scope.organizationId, input.server_id))) {
        throw new DomainError("server_not_found", "server_id does not name a server of this organisation (see GET /servers)");
      }
      const now = deps.clock.now();
      const id = randomUUID();
      const names = checkDomains({ id, name: input.name, domain: null, aliases: [] }, { domain: input.domain, aliases: input.aliases }, deps.addresses.baseDomain);
      try {
        const out = await deps.environments.insert({
          id,
          organizationId: scope.organizationId,
          projectId: project.id,
          serverId: input.server_id ?? project.serverId,
          name: input.name,
          gitBranch: input.git_branch ?? project.defaultBranch,
          domain: names.domain,
          aliases: names.aliases,
          autoDeploy: input.auto_deploy ?? false,
          ...(input.cpu_cores !== undefined ? { cpuCores: input.cpu_cores } : {}),
          ...(input.ram_mb !== undefined ? { ramMb: input.ram_mb } : {}),
          ...(input.disk_gb !== undefined ? { diskGb: input.disk_gb } : {}),
          ...(input.workers !== undefined ? { workers: input.workers } : {}),
          ...(input.migration_id !== undefined ? { migrationId: input.migration_id } : {}),
          createdAt: now,
          updatedAt: now,
        }, (production) => stageOfNew(input.stage, production));
        const row = claimed(out);
        await verifyNow(row.id);
        return view(row);
      } catch (err) {
        // Creates of one project are serialised (environments.repo.ts), so the index is only a backstop.
        if (isUniqueViolation(err, "environments_project_production_key")) {
          throw new DomainError("production_exists", "The project already has a production environment; create this one as staging or development, then promote it");
        }
        if (isUniqueViolation(err)) throw new DomainError("environment_name_taken", `The project already has an environment named ${JSON.stringify(input.name)}`);
        throw err;
      }
    },

    updateDomains,

    /** The environment's host names with their verification status and what proves them. */
    async domains(scope: Scope, id: string) {
      const row = await deps.environments.get(scope, id);
      if (!row) throw notFound("Environment");
      const claims = deps.claims ? await deps.claims([row.id]) : [];
      const target = (await deps.verification?.targetOf(row.id)) ?? null;
      return { data: claims.sort((a, b) => a.name.localeCompare(b.name)).map((c) => domainView(c, target)) };
    },

    /** Checks one name's DNS now (404 when the environment does not claim it); its status after the check. */
    async verifyDomain(scope: Scope, id: string, name: string) {
      const row = await deps.environments.get(scope, id);
      if (!row) throw notFound("Environment");
      const wanted = name.toLowerCase();
      const claim = (deps.claims ? await deps.claims([row.id]) : []).find((c) => c.name === wanted);
      if (!claim) throw notFound("Domain");
      if (deps.verification) await deps.verification.check([claim]);
      const after = (await deps.claims!([row.id])).find((c) => c.name === wanted);
      if (!after) throw notFound("Domain");
      return domainView(after, (await deps.verification?.targetOf(row.id)) ?? null);
    },

    /**
     * Changes an active environment in place: its names (updateDomains, at once), its size
     * (from its next deploy on, which snapshots it) and its stage (staging or development,
     * audited); omitted fields stay as they are. A refused stage is refused before anything
     * else changes.
     */
    async update(
      scope: Scope,
      id: string,
      input: DomainsInput & EnvironmentSize & StageSettings & { stage?: Stage | undefined },
      actor?: StageActor,
    ): Promise<EnvironmentRow> {
      const { domain, aliases, stage, require_passing_tests, refresh_on_push, ...size } = input;
      const before = await deps.environments.get(scope, id);
      if (!before) throw notFound("Environment");
      if (!before.isActive) throw inactive();
      if (stage !== undefined) checkStageChange(before.stage, stage);
      let row = domain !== undefined || aliases !== undefined ? await updateDomains(scope, id, { domain, aliases }) : before;
      const set = {
        ...(size.cpu_cores !== undefined ? { cpuCores: size.cpu_cores } : {}),
        ...(size.ram_mb !== undefined ? { ramMb: size.ram_mb } : {}),
        ...(size.disk_gb !== undefined ? { diskGb: size.disk_gb } : {}),
        ...(size.workers !== undefined ? { workers: size.workers } : {}),
        // From the next deploy on, like the size (stage-builds.ts).
        ...(require_passing_tests !== undefined ? { requirePassingTests: require_passing_tests } : {}),
        // From the next push on (git-hooks: stage-builds.ts refreshesOnPush).
        ...(refresh_on_push !== undefined ? { refreshOnPush: refresh_on_push } : {}),
      };
      if (Object.keys(set).length > 0) {
        const sized = await deps.environments.setSize(row.id, set, deps.clock.now());
        if (!sized) throw inactive();
        row = sized;
      }
      if (stage !== undefined && stage !== row.stage) {
        const summary = `Stage of ${row.name} changed from ${row.stage} to ${stage}`;
        const changed = await deps.environments.setStage(row.id, stage as OtherStage, deps.clock.now(), stageAudit(row.organizationId, actor, "environment.stage", summary));
        // Promoted or destroyed since it was read.
        if (!changed) throw new DomainError("stage_change_refused", `${row.name} became production or was destroyed meanwhile; its stage was not changed`);
        row = changed;
      }
      return row;
    },

    /**
     * Makes the environment its project's production: the current production becomes
     * `previousStage` (required when there is one), in one audited transaction. Promoting
     * the production itself changes nothing.
     */
    async promote(scope: Scope, id: string, previousStage: OtherStage | undefined, actor?: StageActor) {
      const found = await deps.environments.get(scope, id);
      if (!found) throw notFound("Environment");
      if (!found.isActive) throw inactive();
      const out = await deps.environments.promote(
        found.projectId,
        found.id,
        deps.clock.now(),
        (production) => previousStageOf(found.id, production, previousStage),
        (production) =>
          stageAudit(
            found.organizationId,
            actor,
            "environment.promote",
            production && production.id !== found.id
              ? `${found.name} promoted to production; ${production.name} became ${previousStage}`
              : `${found.name} promoted to production (the project had none)`,
          ),
      );
      if (!out) throw inactive();
      return {
        environment: view(out.row),
        previous: out.previous ? { id: out.previous.id, name: out.previous.name, stage: out.previous.stage } : null,
      };
    },
    view,
  };
}
export type EnvironmentsService = ReturnType<typeof createEnvironmentsService>;
