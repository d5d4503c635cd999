// Customers' servers and their latest resource figures (modules/servers).
import { bigint, doublePrecision, index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";

export const servers = pgTable(
  "servers",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    name: text("name").notNull(),
    provider: text("provider").notNull().default("self-hosted"),
    region: text("region"),
    hostname: text("hostname"),
    cpuCores: integer("cpu_cores").notNull().default(0),
    ramMb: integer("ram_mb").notNull().default(0),
    diskGb: integer("disk_gb").notNull().default(0),
    /** pending (never connected) | online | offline */
    status: text("status").notNull().default("pending"),
    lastSeenAt: ts("last_seen_at"),
    /** The agent's Ed25519 public key (raw, base64), set at enrolment. */
    agentPublicKey: text("agent_public_key"),
    agentVersion: text("agent_version"),
    os: text("os"),
    arch: text("arch"),
    dockerVersion: text("docker_version"),
    enrolledAt: ts("enrolled_at"),
    /** Last command seq handed out for this server; bumped under a row lock. */
    lastCommandSeq: bigint("last_command_seq", { mode: "number" }).notNull().default(0),
    /**
     * The server's reverse proxy as its agent last reported it (proxy.state): {running, image,
     * public_addresses, error, checked_at}; null before the first report.
     */
    proxy: jsonb("proxy"),
    createdAt: ts("created_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [index("servers_org_idx").on(t.organizationId, t.createdAt, t.id)],
);

/** Latest resource figures of each server, from its agent's stats events. */
export const serverStats = pgTable("server_stats", {
  serverId: uuid("server_id").primaryKey().references(() => servers.id),
  sampledAt: ts("sampled_at").notNull(),
  cpuPercent: doublePrecision("cpu_percent").notNull(),
  ramUsedMb: integer("ram_used_mb").notNull(),
  ramTotalMb: integer("ram_total_mb").notNull(),
  diskUsedGb: doublePrecision("disk_used_gb").notNull(),
  diskTotalGb: doublePrecision("disk_total_gb").notNull(),
  load1: doublePrecision("load1").notNull(),
  load5: doublePrecision("load5").notNull(),
  load15: doublePrecision("load15").notNull(),
  containersRunning: integer("containers_running").notNull(),
  containersTotal: integer("containers_total").notNull(),
});
