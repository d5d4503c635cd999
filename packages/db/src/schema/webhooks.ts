// Outgoing webhooks: subscriptions and deliveries (modules/webhooks).
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";
import { projects } from "./projects.ts";

export const webhookSubscriptions = pgTable(
  "webhook_subscriptions",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").references(() => projects.id),
    url: text("url").notNull(),
    events: text("events").array().notNull(),
    description: text("description"),
    enabled: boolean("enabled").notNull().default(true),
    /** Legacy: the signing secret in clear, from before 0011; the control plane seals it into secretEnc at start and empties this. */
    secret: text("secret"),
    /** The signing secret (whsec_...), sealed with the instance master key; returned only by the create. */
    secretEnc: text("secret_enc"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [index("webhooks_org_idx").on(t.organizationId, t.createdAt, t.id)],
);

/** One outgoing webhook delivery: an event for one subscription, its attempts and outcome. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    subscriptionId: uuid("subscription_id").notNull().references(() => webhookSubscriptions.id),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    payload: jsonb("payload").notNull(),
    /** pending | succeeded | failed */
    status: text("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    error: text("error"),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastAttemptAt: ts("last_attempt_at"),
    deliveredAt: ts("delivered_at"),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_event_key").on(t.subscriptionId, t.eventId),
    index("webhook_deliveries_sub_idx").on(t.subscriptionId, t.createdAt, t.id),
  ],
);
