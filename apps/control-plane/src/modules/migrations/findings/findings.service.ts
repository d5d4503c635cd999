// What the analysis of a migration's backup found, and what follows from it: the analysis job
// (the stored backup read by analysis/ through migration-analysis.ts, its fields recorded, or
// the migration failed with the reason), GET analysis with what the target must have
// (migration-requirements.ts), and the servers with room for the recommendation.
import type { Readable } from "node:stream";
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { ObjectStore } from "../../../lib/object-store/index.ts";
import { capacityOf } from "../../servers/capacity.ts";
import type { ServersRepo } from "../../servers/servers.repo.ts";
import type { MigrationRow, MigrationsRepo } from "../record/migrations.repo.ts";
import type { AnalysisFields } from "../record/migration-schemas.ts";
import { STEPS } from "../record/migration-states.ts";
import { sha256Source } from "../record/migration-view.ts";
import type { AnalyzeBackup, BackupSource } from "./migration-analysis.ts";
import type { MigrationRequirements } from "./migration-requirements.ts";

export function createFindingsService(deps: {
  repo: Pick<MigrationsRepo, "get" | "byId" | "update">;
  servers: Pick<ServersRepo, "withFigures" | "placedEnvironments">;
  store: ObjectStore;
  analyze: AnalyzeBackup;
  /** What the target must have for the backup (migration-requirements.ts), listed with the analysis. */
  requirements: Pick<MigrationRequirements, "check">;
  /** Fails the migration with a message for the person (record.service.ts). */
  fail: (id: string, message: string) => Promise<unknown>;
}) {
  const { repo, store } = deps;

  async function get(organizationId: string, id: string): Promise<MigrationRow> {
    const row = await repo.get(organizationId, id);
    if (!row) throw notFound("Migration");
    return row;
  }

  return {
    /** The analysis job: reads the stored backup and records what it found (or why it could not). */
    async runAnalysis(id: string, signal?: AbortSignal): Promise<void> {
      const m = await repo.byId(id);
      if (!m || m.storageKey === null || m.currentStep !== STEPS.analyzing || !["uploading", "importing"].includes(m.status)) return;
      const key = m.storageKey;
      const size = m.storedSizeBytes ?? 0;
      const source: BackupSource = {
        size,
        open: async (range) => (await store.get(key, range ? { range } : {})) as Readable,
      };
      let a: AnalysisFields;
      try {
        a = await deps.analyze(source, signal ? { signal } : {});
      } catch (error) {
        const message = (error as { message?: string } | null)?.message ?? String(error);
        // The analysis' own refusals carry a stable code (BackupAnalysisErrorCode), shown first.
        const code = (error as { code?: unknown } | null)?.code;
        await deps.fail(id, typeof code === "string" && /^[a-z][a-z_]*$/.test(code) ? `Analysis failed (${code}): ${message}` : `Analysis failed: ${message}`);
        return;
      }
      await repo.update(
        id,
        {
          status: "analyzed",
          currentStep: null,
          analysis: a,
          erpVersionDetected: a.erp_version,
          databaseSizeBytes: a.database_size_bytes,
          filestoreSizeBytes: a.filestore_size_bytes,
          recommendedCpu: a.recommended_cpu,
          recommendedRamMb: a.recommended_ram_mb,
          recommendedDiskGb: a.recommended_disk_gb,
          estimatedMonthlyCost: a.estimated_monthly_cost,
          vendorEquivalentCost: a.vendor_equivalent_cost,
          monthlySavings: a.monthly_savings,
          errorMessage: null,
        },
        { from: ["uploading", "importing"] },
      );
    },

    async analysis(organizationId: string, id: string) {
      const m = await get(organizationId, id);
      if (m.analysis === null) throw new DomainError("migration_not_analyzed", `Migration ${id} has no analysis yet (it is ${m.status}${m.currentStep ? `, ${m.currentStep}` : ""})`);
      const analysis = m.analysis as AnalysisFields;
      return { migration_id: m.id, ...analysis, sha256: m.storedSha256, sha256_source: sha256Source(m), requirements: await deps.requirements.check({ organizationId: m.organizationId, environmentId: m.environmentId, analysis }) };
    },

    /** The organisation's servers with room for the recommendation, from their live figures. */
    async availableServers(organizationId: string, id: string) {
      const m = await get(organizationId, id);
      if (m.recommendedCpu === null || m.recommendedRamMb === null) {
        throw new DomainError("migration_not_analyzed", `Migration ${id} has no analysis yet: available servers follow its recommendation`);
      }
      const [servers, placed] = await Promise.all([deps.servers.withFigures(organizationId), deps.servers.placedEnvironments(organizationId)]);
      const needDisk = m.recommendedDiskGb ?? 0;
      const out = [];
      for (const s of servers) {
        const on = placed.filter((e) => e.server_id === s.id);
        const allocated = on.reduce((a, e) => ({ cpuCores: a.cpuCores + e.cpu_cores, ramMb: a.ramMb + e.ram_mb, diskGb: a.diskGb + e.disk_gb }), { cpuCores: 0, ramMb: 0, diskGb: 0 });
        const live = s.sampled_at ? { ramUsedMb: s.ram_used_mb!, ramTotalMb: s.ram_total_mb!, diskUsedGb: s.disk_used_gb!, diskTotalGb: s.disk_total_gb! } : null;
        const c = capacityOf({ cpuCores: s.cpu_cores, ramMb: s.ram_mb, diskGb: s.disk_gb }, allocated, live);
        if (c.room === "unknown" || c.free_cpu_cores < m.recommendedCpu || c.free_ram_mb < m.recommendedRamMb || c.free_disk_gb < needDisk) continue;
        out.push({
          id: s.id,
          name: s.name,
          hostname: s.hostname,
          cpu_cores: s.cpu_cores,
          memory_gb: Math.round((live ? live.ramTotalMb : s.ram_mb) / 102.4) / 10,
          disk_gb: live ? live.diskTotalGb : s.disk_gb,
          available_cpu: c.free_cpu_cores,
          available_memory_gb: Math.round(c.free_ram_mb / 102.4) / 10,
          available_disk_gb: c.free_disk_gb,
        });
      }
      return out;
    },
  };
}
export type FindingsService = ReturnType<typeof createFindingsService>;
