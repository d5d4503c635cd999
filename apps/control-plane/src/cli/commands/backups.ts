// `berth backups list|create|download|restore <environment>`. With an API key over the public
// API, with a session over the platform API (the same paths under /environments/{id}). A
// download streams each file through the signed link the API gives, checked against its SHA-256.
import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { downloadFile } from "../download.ts";
import { formatBytes } from "../progress.ts";
import { CliError, EXIT } from "../errors.ts";
import type { Column } from "../output.ts";
import { allPages } from "../pages.ts";
import { confirm } from "../prompt.ts";

interface BackupView {
  id: string;
  status: string;
  backup_type: string;
  created_at: string;
  completed_at: string | null;
  size_bytes: number | null;
  comment: string | null;
  error_message: string | null;
  files: { name: string; sha256: string; size: number }[];
}

const columns: Column<BackupView>[] = [
  { header: "id", get: (b) => b.id },
  { header: "status", get: (b) => b.status },
  { header: "type", get: (b) => b.backup_type },
  { header: "created", get: (b) => b.created_at },
  { header: "size", get: (b) => (b.size_bytes === null ? null : formatBytes(b.size_bytes)) },
  { header: "comment", get: (b) => b.comment ?? b.error_message },
];

async function listBackups(ctx: Context, env: string): Promise<BackupView[]> {
  if (ctx.credentials().kind === "api_key") return allPages((query) => ok(ctx.public().GET("/environments/{id}/backups", { params: { path: { id: env }, query } })));
  return allPages((query) => ok(ctx.platform().GET("/environments/{env_id}/backups", { params: { path: { env_id: env }, query } })));
}

async function downloadLink(ctx: Context, env: string, backup: string) {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().POST("/environments/{id}/backups/{backup_id}/download", { params: { path: { id: env, backup_id: backup } } }));
  return ok(ctx.platform().POST("/environments/{env_id}/backups/{backup_id}/download", { params: { path: { env_id: env, backup_id: backup } } }));
}

/** Polls until the backup is no longer pending; fails (exit 1) when it failed. */
async function waitForBackup(ctx: Context, env: string, id: string): Promise<BackupView> {
  for (;;) {
    const b = (await listBackups(ctx, env)).find((x) => x.id === id);
    if (b && b.status !== "pending" && b.status !== "queued") {
      if (b.status === "failed") throw new CliError(`Backup ${id} failed: ${b.error_message ?? "no reason given"}`, EXIT.failed, "backup_failed");
      return b;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export function registerBackups(program: Command, context: () => Context): void {
  const backups = program
    .command("backups")
    .description("Backups of an environment: database and file store, with SHA-256 checksums")
    .addHelpText("after", "\nExamples:\n  $ berth backups create <environment-id> --wait\n  $ berth backups download <environment-id> <backup-id> -o ./backups");

  backups
    .command("list <environment>")
    .description("List an environment's backups, newest first")
    .addHelpText("after", "\nExample:\n  $ berth backups list <environment-id> --json | jq -r '.[0].id'")
    .action(async (env: string) => {
      const ctx = context();
      const rows = await listBackups(ctx, env);
      ctx.out.result(rows, () => ctx.out.table(rows, columns, "No backups yet: make one with `berth backups create`."));
    });

  backups
    .command("create <environment>")
    .description("Start a backup of an environment on its server")
    .option("--comment <text>", "a note kept with the backup")
    .option("--wait", "wait until the backup is done (exit 1 when it failed)")
    .addHelpText("after", "\nExamples:\n  $ berth backups create <environment-id> --comment 'before the upgrade'\n  $ berth backups create <environment-id> --wait --json")
    .action(async (env: string, opts: { comment?: string; wait?: boolean }) => {
      const ctx = context();
      const body = opts.comment !== undefined ? { comment: opts.comment } : {};
      let id: string;
      let answer: unknown;
      if (ctx.credentials().kind === "api_key") {
        const r = await ok(ctx.public().POST("/environments/{id}/backups", { params: { path: { id: env } }, body }));
        ({ backup_id: id } = r);
        answer = r;
      } else {
        const r = await ok(ctx.platform().POST("/environments/{env_id}/backups", { params: { path: { env_id: env } }, body }));
        ({ id } = r);
        answer = r;
      }
      if (opts.wait) {
        ctx.out.note(`Backup ${id} started; waiting for it to finish…`);
        answer = await waitForBackup(ctx, env, id);
      }
      ctx.out.result(answer, () => ctx.out.line(opts.wait ? `Backup ${id} completed.` : `Backup ${id} started: \`berth backups list ${env}\` shows when it is done.`));
    });

  backups
    .command("download <environment> <backup>")
    .description("Download a backup's files (database dump, file store), checked against their SHA-256")
    .option("-o, --output <path>", "where to write: a directory (default: the current one, each file under its own name), or a file name with --file")
    .option("--file <name>", "only this one of the backup's files, e.g. db.dump")
    .option("--force", "overwrite files that exist")
    .addHelpText("after", "\nExamples:\n  $ berth backups download <environment-id> <backup-id>\n  $ berth backups download <environment-id> <backup-id> --file db.dump -o acme.dump")
    .action(async (env: string, backup: string, opts: { output?: string; file?: string; force?: boolean }) => {
      const ctx = context();
      const link = await downloadLink(ctx, env, backup);
      const files = opts.file ? link.files.filter((f) => f.name === opts.file) : link.files;
      if (files.length === 0) throw new CliError(`Backup ${backup} has no file ${opts.file}; it has ${link.files.map((f) => f.name).join(", ")}.`, EXIT.usage, "file_not_found");
      const toFile = opts.file !== undefined && opts.output !== undefined && !(existsSync(opts.output) && statSync(opts.output).isDirectory());
      const dir = toFile ? path.dirname(opts.output!) : (opts.output ?? ".");
      mkdirSync(dir, { recursive: true });
      const tty = Boolean(process.stderr.isTTY) && !ctx.out.json;
      const written: { name: string; path: string; size_bytes: number; sha256: string }[] = [];
      for (const f of files) {
        // A name from the server never leaves the chosen directory.
        if (path.basename(f.name) !== f.name || f.name.startsWith(".")) throw new CliError(`The backup names a file ${JSON.stringify(f.name)}, which is not a plain file name.`, EXIT.failed, "bad_file_name");
        const target = toFile ? opts.output! : path.join(dir, f.name);
        if (existsSync(target) && !opts.force) throw new CliError(`${target} exists: pass --force to overwrite it, or -o another directory.`, EXIT.usage, "file_exists");
        const progress = tty ? (n: number, total: number) => process.stderr.write(`\r${f.name}  ${formatBytes(n)} / ${formatBytes(total)} (${total ? Math.floor((n * 100) / total) : 100}%)\x1b[K`) : undefined;
        const got = await downloadFile({ url: f.url, file: target, sha256: f.sha256, sizeBytes: f.size_bytes, ...(progress ? { progress } : {}) });
        if (tty) process.stderr.write("\n");
        written.push({ name: f.name, path: target, size_bytes: got.bytes, sha256: got.sha256 });
      }
      ctx.out.result({ backup_id: backup, files: written }, () => {
        for (const w of written) ctx.out.line(`${w.path}  ${formatBytes(w.size_bytes)}  sha256 ${w.sha256}`);
      });
    });

  backups
    .command("restore <environment> <backup>")
    .description("Restore a completed backup onto an environment (its current data is replaced)")
    .option("-y, --yes", "do not ask for confirmation (needed without a terminal)")
    .addHelpText("after", "\nExample:\n  $ berth backups restore <environment-id> <backup-id> --yes")
    .action(async (env: string, backup: string, opts: { yes?: boolean }) => {
      const ctx = context();
      await confirm(`Restore backup ${backup} onto environment ${env}, replacing its database and files?`, opts.yes);
      const body = { backup_id: backup };
      const answer =
        ctx.credentials().kind === "api_key"
          ? await ok(ctx.public().POST("/environments/{id}/restore", { params: { path: { id: env } }, body }))
          : await ok(ctx.platform().POST("/environments/{env_id}/restore", { params: { path: { env_id: env } }, body }));
      const operation = "deployment_id" in answer ? answer.deployment_id : answer.task_id;
      ctx.out.result(answer, () => ctx.out.line(`Restoring backup ${backup}: operation ${operation} (\`berth logs\` or the dashboard follow it).`));
    });
}
