-- Secrets at rest are sealed with the instance master key (AES-256-GCM, apps/control-plane
-- lib/master-key.ts), which only the control plane holds, so the rows written before this
-- migration are converted by the control plane when it starts (sealStoredCredentials in
-- modules/projects, sealStoredSecrets in modules/webhooks, run by modules/jobs/background.ts):
-- the userinfo (user:token@) of projects.git_repo_url moves, sealed, into
-- git_repo_credentials_enc; webhook_subscriptions.secret moves, sealed, into secret_enc and
-- the clear column is emptied (null). Until then the readers accept the old form.
ALTER TABLE "webhook_subscriptions" ALTER COLUMN "secret" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "git_repo_credentials_enc" text;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "secret_enc" text;
