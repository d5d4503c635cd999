// What the control plane and a server's agent exchange: enrolment, command signing, the command
// outbox, the event stream and which replica holds the agent's WebSocket (modules/agents).
import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { servers } from "./servers.ts";

/** One-time, short-lived tokens an agent exchanges for its server's identity. */
export const enrollmentTokens = pgTable(
  "enrollment_tokens",
  {
    id: id(),
    serverId: uuid("server_id").notNull().references(() => servers.id),
    tokenHash: text("token_hash").notNull(),
    createdBy: text("created_by"),
    createdAt: ts("created_at").notNull().defaultNow(),
    expiresAt: ts("expires_at").notNull(),
    usedAt: ts("used_at"),
  },
  (t) => [uniqueIndex("enrollment_tokens_hash_key").on(t.tokenHash)],
);

/** The control plane's command-signing keys; private keys are encrypted at rest. */
export const signingKeys = pgTable("signing_keys", {
  keyId: text("key_id").primaryKey(),
  publicKey: text("public_key").notNull(),
  /** AES-256-GCM ciphertext of the PKCS#8 PEM, under the instance master key. */
  privateKeyEnc: text("private_key_enc").notNull(),
  /** active (signs new commands) | accepted (still pinned, not signing) | retired */
  state: text("state").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
  retiredAt: ts("retired_at"),
});

/**
 * Command outbox: a command lives here until the agent has answered it, then (without its
 * secrets) until retention deletes it.
 */
export const agentCommands = pgTable(
  "agent_commands",
  {
    commandId: uuid("command_id").primaryKey(),
    serverId: uuid("server_id").notNull().references(() => servers.id),
    seq: bigint("seq", { mode: "number" }).notNull(),
    type: text("type").notNull(),
    /** The signed command in clear: rows written before migration 0025 only, emptied once they leave pending. */
    signed: jsonb("signed"),
    /** The signed command as the agent gets it, AES-256-GCM under the instance master key; null once it left pending. */
    sealed: text("sealed"),
    /** Its parameters as staff may see them (control plane agents/shown-params.ts): no secret, no signed link. */
    shownParams: jsonb("shown_params").notNull().default({}),
    /** Who asked: user:<id>, api_key:<id> or system:<job>. */
    issuedBy: text("issued_by").notNull(),
    deploymentId: uuid("deployment_id"),
    /** pending | accepted | rejected | expired | succeeded | failed */
    state: text("state").notNull().default("pending"),
    rejectionCode: text("rejection_code"),
    result: jsonb("result"),
    error: jsonb("error"),
    createdAt: ts("created_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    sentAt: ts("sent_at"),
    acceptedAt: ts("accepted_at"),
    completedAt: ts("completed_at"),
  },
  (t) => [
    uniqueIndex("agent_commands_server_seq_key").on(t.serverId, t.seq),
    // One command per operation: dispatching twice (fast path and repair sweep) cannot double it.
    uniqueIndex("agent_commands_deployment_key").on(t.deploymentId).where(sql`${t.deploymentId} is not null`),
    index("agent_commands_pending_idx").on(t.serverId, t.seq).where(sql`${t.state} = 'pending'`),
    // Retention deletes ended commands by age.
    index("agent_commands_created_idx").on(t.createdAt),
  ],
);

/**
 * Where each server's event stream stands: the highest agent event seq stored (events at or
 * below it are duplicates). Apart from the server row, so storing events (which locks this
 * row) and issuing commands or recording liveness (which update the server row) never wait
 * for each other. A row appears with the server's first stored event.
 */
export const agentStreams = pgTable("agent_streams", {
  serverId: uuid("server_id")
    .primaryKey()
    .references(() => servers.id),
  lastEventSeq: bigint("last_event_seq", { mode: "number" }).notNull().default(0),
});

/** Which replica holds which agent's WebSocket right now. */
export const agentSessions = pgTable("agent_sessions", {
  serverId: uuid("server_id").primaryKey().references(() => servers.id),
  replicaId: text("replica_id").notNull(),
  connectionId: text("connection_id").notNull(),
  connectedAt: ts("connected_at").notNull(),
});

/**
 * Events received from agents (logs, steps, results), unique on (server_id, seq). Partitioned
 * by month on `ts` (migration 0022): the uniqueness is a UNIQUE (server_id, seq) index on each
 * partition, which drizzle cannot declare; the partitions are made and dropped by the control
 * plane's retention job.
 */
export const agentEvents = pgTable(
  "agent_events",
  {
    serverId: uuid("server_id").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    kind: text("kind").notNull(),
    ts: ts("ts").notNull(),
    commandId: uuid("command_id"),
    deploymentId: uuid("deployment_id"),
    level: text("level"),
    body: jsonb("body").notNull(),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  // Most events (a server's own logs, stats) belong to no deployment: they stay out of the
  // deployment index, one index insertion less per event on the hottest write path.
  (t) => [
    index("agent_events_deployment_idx").on(t.deploymentId, t.seq).where(sql`${t.deploymentId} is not null`),
  ],
);
