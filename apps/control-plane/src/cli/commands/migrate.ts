// `berth migrate <file>`: moves an existing ERP in from a backup file. Creates the migration,
// uploads the file (tier 1 one request, larger files resumably: --resume <migration-id>
// continues an interrupted upload from the server's offset), waits for the analysis and
// prints it as a report; with --server it is configured for that server, with --start
// started, and with --follow followed to its end (exit 0 completed, 1 failed or cancelled).
import { statSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { ok, type PlatformComponents, type PlatformPaths } from "@berth/protocol/api-client";
import type { Client } from "openapi-fetch";
import type { Context } from "../context.ts";
import type { Outcome } from "../deployments.ts";
import { CliError, EXIT } from "../errors.ts";
import type { Output } from "../output.ts";
import { formatBytes, progressView } from "../progress.ts";
import { confirm } from "../prompt.ts";
import { openResumableStream } from "../sse.ts";
import { savedUpload, sha256Of, uploadBackup, type UploadTarget } from "../upload.ts";

type Migration = PlatformComponents["schemas"]["Migration"];
type Analysis = PlatformComponents["schemas"]["MigrationAnalysis"];

/** What each migration status means to the CLI: "waiting" for the upload and analysis. */
const MIGRATION_OUTCOME: Record<Migration["status"], Outcome | "waiting" | "analyzed"> = {
  pending: "waiting",
  uploading: "waiting",
  importing: "waiting",
  analyzed: "analyzed",
  ready: "analyzed",
  processing: "active",
  completed: "succeeded",
  unlinked: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
};

interface MigrateOptions {
  org?: string;
  name?: string;
  server?: string;
  start?: boolean;
  follow?: boolean;
  resume?: string;
  chunkSize?: number;
  consent?: boolean;
}

/** What the API's data_processing_consent stands for, asked in these words (or given by --consent). */
const CONSENT_QUESTION = "The backup holds your ERP's personal data (customers, employees, users). Do you consent to Berth processing it to analyse and move it in?";

export function registerMigrate(program: Command, context: () => Context): void {
  program
    .command("migrate")
    .description("Move an existing ERP in from a backup file: upload, analysis report, and optionally start it on a server")
    .argument("<file>", "the backup (.zip, .tar, .tar.gz, .sql or .dump)")
    .option("--org <organization-id>", "the organisation (default: your only one)")
    .option("--name <name>", "the project's name (default: the file's name)")
    .option("--server <server-id>", "configure the migration for this server once analysed")
    .option("--start", "start the migration (needs --server)")
    .option("-f, --follow", "with --start: follow the migration to its end; the exit code is its result")
    .option("--resume <migration-id>", "continue the interrupted upload of this migration from where the server stands")
    .option("--consent", "consent to Berth processing the personal data the backup holds (asked on a terminal; required without one)")
    .option("--chunk-size <bytes>", "bytes per request of a resumable upload (default: the server's)", (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1024) throw new CliError("--chunk-size must be a whole number of bytes, at least 1024.", EXIT.usage, "invalid_chunk_size");
      return n;
    })
    .addHelpText(
      "after",
      `
A new migration needs your consent to processing the personal data the backup holds:
asked on a terminal, or given with --consent (scripts).

Examples:
  $ berth migrate acme.zip                                  # upload, then the analysis report
  $ berth migrate acme.zip --consent --json                 # in a script
  $ berth migrate acme.zip --server 5d1e… --start --follow  # and move it onto a server
  $ berth migrate acme.zip --resume 9a0b…                   # after an interrupted upload`,
    )
    .action(async (file: string, opts: MigrateOptions) => {
      const ctx = context();
      if (opts.start && !opts.server) throw new CliError("--start needs --server: the migration must know where to go.", EXIT.usage, "server_required");
      if (opts.follow && !opts.start) throw new CliError("--follow needs --start.", EXIT.usage, "start_required");
      await migrate(ctx, file, opts);
    });
}

async function migrate(ctx: Context, file: string, opts: MigrateOptions): Promise<void> {
  const out = ctx.out;
  const api = ctx.platform("berth migrate");
  const { token } = ctx.credentials();
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new CliError(`Cannot read ${file}.`, EXIT.usage, "file_unreadable");
  }
  const name = path.basename(file);
  out.note(`Checking ${name} (${formatBytes(size)})…`);
  const sha256 = await sha256Of(file);

  let migration: Migration;
  let target: UploadTarget;
  if (opts.resume) {
    migration = await ok(api.GET("/migrations/{migration_id}", { params: { path: { migration_id: opts.resume } } }));
    const saved = savedUpload(ctx.env, migration.id);
    if (!saved) throw new CliError(`No interrupted upload of migration ${migration.id} is known here; run without --resume to upload again.`, EXIT.usage, "nothing_to_resume");
    target = { upload_url: saved.url, protocol: "tus", chunk_size_bytes: null };
  } else {
    await confirm(CONSENT_QUESTION, opts.consent, "--consent");
    const organizationId = opts.org ?? (await onlyOrganization(api));
    migration = await ok(
      api.POST("/migrations", {
        body: { organization_id: organizationId, source_type: "on_premise", project_name: opts.name ?? name.replace(/\.(zip|tar\.gz|tgz|tar|sql|dump)$/i, ""), data_processing_consent: true },
      }),
    );
    out.note(`Migration ${migration.id} created.`);
    target = await ok(api.POST("/migrations/{migration_id}/upload/init", { params: { path: { migration_id: migration.id }, query: { file_name: name, file_size: size, sha256 } } }));
  }

  const bar = progressView(out);
  let lastTenth = -1;
  await uploadBackup({
    env: ctx.env,
    token,
    migrationId: migration.id,
    target,
    file: { path: file, name, size, sha256 },
    ...(opts.chunkSize ? { chunkBytes: opts.chunkSize } : {}),
    note: (t) => {
      bar.done();
      out.note(t);
    },
    onProgress: (sent, total) => {
      const percent = total ? (sent / total) * 100 : 100;
      const tenth = Math.floor(percent / 10);
      bar.update({ percent, label: `uploading ${formatBytes(sent)} of ${formatBytes(total)}`, stepChanged: false });
      // Not a terminal: a line every tenth, on stderr (stdout is for the report).
      if (!process.stderr.isTTY && tenth !== lastTenth) {
        lastTenth = tenth;
        out.note(`uploaded ${formatBytes(sent)} of ${formatBytes(total)} (${Math.round(percent)}%)`);
      }
    },
  });
  bar.done();
  out.note("Upload complete and verified; analysing…");

  migration = await waitForAnalysis(api, migration.id);
  const analysis = await ok(api.GET("/migrations/{migration_id}/analysis", { params: { path: { migration_id: migration.id } } }));
  if (!opts.server) {
    out.result({ migration, analysis }, () => report(out, migration, analysis));
    return;
  }
  migration = await ok(api.POST("/migrations/{migration_id}/configure", { params: { path: { migration_id: migration.id } }, body: { target_vm_id: opts.server } }));
  if (!opts.start) {
    out.result({ migration, analysis }, () => {
      report(out, migration, analysis);
      out.line(`Configured for server ${opts.server}; start it from the dashboard (or POST /api/v1/migrations/${migration.id}/start).`);
    });
    return;
  }
  const startedAnswer = await ok(api.POST("/migrations/{migration_id}/start", { params: { path: { migration_id: migration.id } } }));
  if (!opts.follow) {
    out.result({ migration, analysis, start: startedAnswer }, () => {
      report(out, migration, analysis);
      out.line(`Migration ${migration.id} started: ${startedAnswer.message}`);
    });
    return;
  }
  if (out.json) out.line(JSON.stringify({ type: "analysis", migration, analysis }));
  else report(out, migration, analysis);
  await followMigration(ctx, api, migration);
}

async function onlyOrganization(api: Client<PlatformPaths>): Promise<string> {
  const { data } = await ok(api.GET("/organizations"));
  if (data.length === 1) return data[0]!.id;
  const list = data.map((o) => `  ${o.id}  ${o.name}`).join("\n");
  throw new CliError(data.length === 0 ? "You belong to no organisation." : `Name the organisation with --org, one of:\n${list}`, EXIT.usage, "organization_required");
}

async function waitForAnalysis(api: Client<PlatformPaths>, id: string): Promise<Migration> {
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    const m = await ok(api.GET("/migrations/{migration_id}", { params: { path: { migration_id: id } } }));
    const outcome = MIGRATION_OUTCOME[m.status];
    if (outcome === "failed" || outcome === "cancelled") throw new CliError(`Migration ${id} ${outcome === "failed" ? "failed" : "was cancelled"}: ${m.error_message ?? "no reason given"}`, EXIT.failed, "migration_failed");
    if (outcome !== "waiting") return m;
    if (Date.now() > deadline) throw new CliError(`The analysis of migration ${id} did not finish in 30 minutes.`, EXIT.failed, "analysis_timeout");
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function report(out: Output, m: Migration, a: Analysis): void {
  out.line(out.paint("bold", `Migration ${m.id}: ${m.project_name}`));
  out.record([
    ["ERP version", a.erp_version],
    ["PostgreSQL", a.postgres_version],
    ["Database", `${a.database_name ?? "-"} (${formatBytes(a.database_size_bytes)})`],
    ["File store", formatBytes(a.filestore_size_bytes)],
    ["Total size", formatBytes(a.total_size_bytes)],
    ["Modules", `${a.total_modules} (${a.standard_modules.length} standard, ${a.custom_modules.length} custom)`],
    ["Custom modules", a.custom_modules],
    ["Users", a.user_count],
    ["Partners", a.partner_count],
    ["Recommended", `${a.recommended_cpu} CPU, ${a.recommended_ram_mb} MB RAM, ${a.recommended_disk_gb} GB disk`],
    ["Monthly cost", `${a.estimated_monthly_cost} (vendor: ${a.vendor_equivalent_cost}, saving ${a.monthly_savings})`],
  ]);
  for (const w of a.warnings ?? []) out.line(`${out.paint("yellow", "warning:")} ${w}`);
}

interface ProgressEvent {
  migration_id: string;
  status: Migration["status"];
  progress_percent: number;
  current_step: string | null;
  error_message: string | null;
}

/** Follows migration_progress events to the end (resumed after a cut like deploy --follow). */
async function followMigration(ctx: Context, api: Client<PlatformPaths>, start: Migration): Promise<void> {
  const out = ctx.out;
  const bar = progressView(out);
  let step: string | null = null;
  let finish: (m: ProgressEvent) => void = () => {};
  const finished = new Promise<ProgressEvent>((r) => (finish = r));
  const show = (e: ProgressEvent) => {
    const changed = e.current_step !== null && e.current_step !== step;
    if (changed) step = e.current_step;
    if (out.json && changed) out.line(JSON.stringify({ type: "step", step: e.current_step, progress_percent: e.progress_percent }));
    else bar.update({ percent: e.progress_percent, label: step ?? e.status, stepChanged: changed });
    const outcome = MIGRATION_OUTCOME[e.status];
    if (outcome === "succeeded" || outcome === "failed" || outcome === "cancelled") finish(e);
  };
  const readState = async () => {
    const m = await ok(api.GET("/migrations/{migration_id}", { params: { path: { migration_id: start.id } } }));
    show({ migration_id: m.id, status: m.status, progress_percent: m.progress_percent, current_step: m.current_step, error_message: m.error_message });
  };
  const stream = openResumableStream({
    url: async () => {
      const t = await ok(api.POST("/events/tickets", { body: { organization_id: start.organization_id } }));
      return `${ctx.credentials().url}/api/v1/events?${new URLSearchParams({ organization_id: start.organization_id, ticket: t.ticket })}`;
    },
    onOpen: readState,
    onCut: (why) => out.note(`(event stream interrupted: ${why}; reconnecting)`),
    onEvent: (e) => {
      const p = e.data as ProgressEvent;
      if (e.event === "migration_progress" && p.migration_id === start.id) show(p);
      else if (e.event === "reset") return readState();
    },
  });
  try {
    await Promise.race([finished, stream.done]);
  } finally {
    stream.stop();
    bar.done();
  }
  const final = await ok(api.GET("/migrations/{migration_id}", { params: { path: { migration_id: start.id } } }));
  if (out.json) out.line(JSON.stringify({ type: "result", status: final.status, migration: final }));
  const outcome = MIGRATION_OUTCOME[final.status];
  if (outcome === "succeeded") {
    if (!out.json) out.line(out.paint("green", `✓ Migration ${final.id} completed${final.environment_url ? `: ${final.environment_url}` : ""}.`));
    return;
  }
  throw new CliError(`Migration ${final.id} ${outcome === "cancelled" ? "was cancelled" : "failed"}${final.current_step ? ` at step ${final.current_step}` : ""}: ${final.error_message ?? "no reason given"}`, EXIT.failed, "migration_failed");
}
