// Rules for webhook subscriptions: HTTPS targets (plain HTTP only to receivers on the
// operator's allow-list), never a private, loopback, link-local or metadata address written
// into the URL (names are checked again after resolution, at delivery: lib/outbound), a
// signing secret shown once (stored sealed with the master key), and project-scoped keys
// confined to their project.
import { randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { seal } from "../../lib/master-key.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { RequestGuard } from "../../lib/outbound/request-guard.ts";
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

type UrlPolicy = Pick<RequestGuard, "refusalWithoutLookup" | "isListed">;

export function assertDeliverableUrl(text: string, outbound: UrlPolicy): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DomainError("invalid_webhook_url", "url must be an absolute HTTPS URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new DomainError("invalid_webhook_url", "url must use HTTPS");
  if (url.username || url.password) throw new DomainError("invalid_webhook_url", "url must not carry credentials; verify the signature instead");
  if (outbound.refusalWithoutLookup(url) !== null) {
    throw new DomainError(
      "invalid_webhook_url",
      "url must not point to a private, loopback, link-local or metadata address (an operator can allow self-hosted receivers with BERTH_OUTBOUND_ALLOW)",
    );
  }
  if (url.protocol === "http:" && !outbound.isListed(url)) {
    throw new DomainError("invalid_webhook_url", "url must use HTTPS (plain HTTP is accepted only for receivers on the operator's BERTH_OUTBOUND_ALLOW list)");
  }
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
  outbound: UrlPolicy;
  masterKey: Buffer;
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
      assertDeliverableUrl(input.url, deps.outbound);
      const now = deps.clock.now();
      const secret = `whsec_${randomBytes(32).toString("base64url")}`;
      const row = await deps.webhooks.insert({
        organizationId: scope.organizationId,
        projectId: await projectFor(scope, input.project_id),
        url: input.url,
        events: uniq(input.events),
        description: input.description ?? null,
        enabled: input.enabled ?? true,
        secret: null,
        secretEnc: seal(deps.masterKey, secret),
        createdAt: now,
        updatedAt: now,
      });
      return { ...webhookView(row), secret };
    },
    async update(scope: Scope, id: string, input: WebhookInput) {
      if (input.url !== undefined) assertDeliverableUrl(input.url, deps.outbound);
      const values: Record<string, unknown> = { updatedAt: deps.clock.now() };
      if (input.url !== undefined) values.url = input.url;
      if (input.events !== undefined) values.events = uniq(input.events);
      if (input.description !== undefined) values.description = input.description;
      if (input.enabled !== undefined) values.enabled = input.enabled;
      const row = await deps.webhooks.update(scope, id, values);
      if (!row) throw notFound("Webhook");
      return webhookView(row);
    },
    /**
     * Seals the secrets stored in clear before migration 0011 (run at start; replicas racing
     * on a row write the same result). Returns how many were sealed.
     */
    async sealStoredSecrets(): Promise<number> {
      let sealed = 0;
      for (;;) {
        const rows = await deps.webhooks.withClearSecrets(100);
        if (rows.length === 0) return sealed;
        for (const r of rows) {
          await deps.webhooks.moveSecret(r.id, r.secret, seal(deps.masterKey, r.secret));
          sealed++;
        }
      }
    },
    async remove(scope: Scope, id: string) {
      const row = await deps.webhooks.update(scope, id, { deletedAt: deps.clock.now() });
      if (!row) throw notFound("Webhook");
    },
  };
}
export type WebhooksService = ReturnType<typeof createWebhooksService>;
