// What the API remembers of requests: idempotency records and rate-limit windows
// (modules/idempotency, modules/rate-limits).
import { bigint, index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { ts } from "./columns.ts";

export const idempotencyRecords = pgTable(
  "idempotency_records",
  {
    /** Who the key belongs to, e.g. api_key:<uuid> or user:<uuid>. */
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    /** in_flight | completed */
    state: text("state").notNull(),
    method: text("method").notNull(),
    path: text("path").notNull(),
    statusCode: integer("status_code"),
    responseBody: text("response_body"),
    responseHeaders: jsonb("response_headers"),
    createdAt: ts("created_at").notNull(),
    lockedAt: ts("locked_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_expires_idx").on(t.expiresAt)],
);

export const rateLimitCounters = pgTable(
  "rate_limit_counters",
  {
    bucket: text("bucket").notNull(),
    windowStart: bigint("window_start", { mode: "number" }).notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.windowStart] })],
);
