// An organisation's live event stream (modules/events).
import { bigserial, index, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { ts, txId } from "./columns.ts";

/** An organisation's live events other than log lines (status changes, server figures, migrations). */
export const orgEvents = pgTable(
  "org_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    organizationId: uuid("organization_id").notNull(),
    type: text("type").notNull(),
    data: jsonb("data").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
    tx: txId(),
  },
  (t) => [index("org_events_org_tx_idx").on(t.organizationId, t.tx, t.id), index("org_events_created_idx").on(t.createdAt)],
);
