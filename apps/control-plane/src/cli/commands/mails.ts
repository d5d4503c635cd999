// `berth mails <environment> [--id <mail>]`: the mail a staging or development environment's
// ERP sent, caught on its server (kept 7 days, at most 1,000). Without --id, the newest
// messages; with it, one message: its headers' essentials, attachments and text part (the
// HTML with --html, or all of it with --json). With an API key over the public API, with a
// session over the platform API (the same paths under /environments/{id}).
import type { Command } from "commander";
import { ok } from "@berth/protocol/api-client";
import type { Context } from "../context.ts";
import { formatBytes } from "../progress.ts";
import type { Column } from "../output.ts";

interface MailSummary {
  id: string;
  from: string;
  to: string[];
  subject: string;
  received_at: string;
  size: number;
  attachments: string[];
}

const columns: Column<MailSummary>[] = [
  { header: "id", get: (m) => m.id },
  { header: "received", get: (m) => m.received_at },
  { header: "from", get: (m) => m.from },
  { header: "to", get: (m) => m.to.join(", ") },
  { header: "subject", get: (m) => m.subject },
  { header: "attachments", get: (m) => (m.attachments.length ? m.attachments.join(", ") : null) },
];

async function listMails(ctx: Context, env: string, limit: number) {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().GET("/environments/{id}/mails", { params: { path: { id: env }, query: { limit } } }));
  return ok(ctx.platform().GET("/environments/{env_id}/mails", { params: { path: { env_id: env }, query: { limit } } }));
}

async function getMail(ctx: Context, env: string, mail: string) {
  if (ctx.credentials().kind === "api_key") return ok(ctx.public().GET("/environments/{id}/mails/{mail_id}", { params: { path: { id: env, mail_id: mail } } }));
  return ok(ctx.platform().GET("/environments/{env_id}/mails/{mail_id}", { params: { path: { env_id: env, mail_id: mail } } }));
}

export function registerMails(program: Command, context: () => Context): void {
  program
    .command("mails <environment>")
    .description("Mail a staging or development environment's ERP sent: caught on its server, delivered to nobody")
    .option("--id <mail>", "show one message")
    .option("--html", "with --id: print the HTML part instead of the text part")
    .option("--limit <n>", "how many of the newest messages to list (1-100)", "20")
    .addHelpText("after", "\nExamples:\n  $ berth mails <environment-id>\n  $ berth mails <environment-id> --id <mail-id>\n  $ berth mails <environment-id> --json | jq -r '.[0].subject'")
    .action(async (env: string, opts: { id?: string; html?: boolean; limit: string }) => {
      const ctx = context();
      if (opts.id === undefined) {
        const page = await listMails(ctx, env, Math.min(100, Math.max(1, Number(opts.limit) || 20)));
        ctx.out.result(page.data, () => ctx.out.table(page.data, columns, "No mail caught in the last 7 days."));
        return;
      }
      const mail = await getMail(ctx, env, opts.id);
      ctx.out.result(mail, () => {
        ctx.out.record([
          ["From", mail.from],
          ["To", mail.to.join(", ")],
          ["Subject", mail.subject],
          ["Received", mail.received_at],
          ["Size", formatBytes(mail.size)],
          ["Attachments", mail.attachments.length ? mail.attachments.map((a) => `${a.filename ?? "(unnamed)"} (${a.content_type}, ${formatBytes(a.size)})`).join(", ") : "none"],
        ]);
        ctx.out.line();
        const body = opts.html ? mail.html : (mail.text ?? mail.html);
        ctx.out.line(body ?? "(no body)");
        if (mail.truncated) ctx.out.line("\n(The message was cut: its parts were longer than Berth keeps.)");
      });
    });
}
