// Rules for webhook subscriptions: HTTPS targets (plain HTTP only to loopback, for local
// receivers), a signing secret shown once, and project-scoped keys confined to their project.
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import type { ProjectsRepo } from "../projects/projects.repo.ts";
import type { WebhookEvent } from "./webhook-events.ts";
import type { WebhookRow, WebhooksRepo } from "./webhooks.repo.ts";

export interface WebhookInput {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
  project_id?: string | null | undefined;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

export function assertDeliverableUrl(text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DomainError("invalid_webhook_url", "url must be an absolute HTTPS URL");
  }
  const ok = url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.has(url.hostname));
  if (!ok) throw new DomainError("invalid_webhook_url", "url must use HTTPS (plain HTTP is accepted only for localhost receivers)");
  if (url.username || url.password) throw new DomainError("invalid_webhook_url", "url must not carry credentials; verify the signature instead");
}

export function webhookView(w: WebhookRow) {
  return {
    id: w.id,
    url: w.url,
    events: w.events as WebhookEvent[],
    description: w.description,
    enabled: w.enabled,
    project_id: w.projectId,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

export function createWebhooksService(deps: {
  webhooks: WebhooksRepo;
  projects: Pick<ProjectsRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
}) {
  async function projectFor(scope: Scope, projectId: string | null | undefined): Promise<string | null> {
    const wanted = projectId ?? scope.projectId;
    if (!wanted) return null;
    if (!(await deps.projects.get(scope, wanted))) throw notFound("Project");
    return wanted;
  }
  const uniq = (events: string[]) => [...new Set(events)];

  return {
    async list(scope: Scope, page: PageRequest) {
      return listPage(deps.cursors, "webhooks", page, (limit, after) => deps.webhooks.list(scope, limit, after), webhookView);
    },
    async get(scope: Scope, id: string) {
      const row = await deps.webhooks.get(scope, id);
      if (!row) throw notFound("Webhook");
      return webhookView(row);
    },
    async create(scope: Scope, input: WebhookInput & { url: string; events: string[] }) {
      assertDeliverableUrl(input.url);
      const now = deps.clock.now();
      const secret = `whsec_${randomBytes(32).toString("base64url")}`;
      const row = await deps.webhooks.insert({
        organizationId: scope.organizationId,
        projectId: await projectFor(scope, input.project_id),
        url: input.url,
        events: uniq(input.events),
        description: input.description ?? null,
        enabled: input.enabled ?? true,
        secret,
        createdAt: now,
        updatedAt: now,
      });
      return { ...webhookView(row), secret };
    },
    async update(scope: Scope, id: string, input: WebhookInput) {
      if (input.url !== undefined) assertDeliverableUrl(input.url);
      const values: Record<string, unknown> = { updatedAt: deps.clock.now() };
      if (input.url !== undefined) values.url = input.url;
      if (input.events !== undefined) values.events = uniq(input.events);
      if (input.description !== undefined) values.description = input.description;
      if (input.enabled !== undefined) values.enabled = input.enabled;
      const row = await deps.webhooks.update(scope, id, values);
      if (!row) throw notFound("Webhook");
      return webhookView(row);
    },
    async remove(scope: Scope, id: string) {
      const row = await deps.webhooks.update(scope, id, { deletedAt: deps.clock.now() });
      if (!row) throw notFound("Webhook");
    },
  };
}
export type WebhooksService = ReturnType<typeof createWebhooksService>;
