// Mail that staging and development ERPs sent, caught on their server and reported by its
// agent (modules/mails). Kept 7 days, at most 1,000 per environment (oldest dropped first).
import { boolean, index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { ts } from "./columns.ts";
import { environments } from "./environments.ts";
import { organizations } from "./organizations.ts";

export const caughtMails = pgTable(
  "caught_mails",
  {
    /** The agent's mail_id: a resent event stores the mail once. */
    id: uuid("id").primaryKey(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    environmentId: uuid("environment_id")
      .notNull()
      .references(() => environments.id, { onDelete: "cascade" }),
    receivedAt: ts("received_at").notNull(),
    from: text("from").notNull(),
    to: text("to").array().notNull(),
    subject: text("subject").notNull(),
    size: integer("size").notNull(),
    html: text("html"),
    text: text("text"),
    truncated: boolean("truncated").notNull(),
    /** [{name, value}] in the message's order. */
    headers: jsonb("headers").$type<{ name: string; value: string }[]>().notNull(),
    /** [{filename, content_type, size}]: names and sizes only, never the bytes. */
    attachments: jsonb("attachments").$type<{ filename: string | null; content_type: string; size: number }[]>().notNull(),
  },
  (t) => [index("caught_mails_environment_idx").on(t.environmentId, t.receivedAt, t.id)],
);
