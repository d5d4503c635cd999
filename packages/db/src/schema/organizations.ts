// Organisations, who belongs to them and the invitations that add people (modules/organizations, modules/invitations).
import { sql } from "drizzle-orm";
import { pgTable, primaryKey, text, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { users } from "./users.ts";

export const organizations = pgTable("organizations", {
  id: id(),
  name: text("name").notNull(),
  /** free | starter | pro | enterprise — the public API needs starter or higher. */
  plan: text("plan").notNull().default("starter"),
  createdAt: ts("created_at").notNull().defaultNow(),
});

/** Organisation-level roles: owner | admin | member. */
export const memberships = pgTable(
  "memberships",
  {
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    userId: uuid("user_id").notNull().references(() => users.id),
    role: text("role").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.userId] })],
);

/**
 * An invitation to join an organisation: the only way a person is added to one. The invitee
 * accepts through a single-use token sent to the e-mail address (kept as SHA-256 only), so
 * an account someone registered under another person's address cannot be attached.
 */
export const invitations = pgTable(
  "invitations",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    email: text("email").notNull(),
    role: text("role").notNull(),
    tokenHash: text("token_hash").notNull(),
    invitedBy: uuid("invited_by").references(() => users.id),
    createdAt: ts("created_at").notNull().defaultNow(),
    /** When the current token was sent; a resend makes a new token and moves this. */
    sentAt: ts("sent_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    acceptedAt: ts("accepted_at"),
    acceptedBy: uuid("accepted_by").references(() => users.id),
    revokedAt: ts("revoked_at"),
  },
  (t) => [
    uniqueIndex("invitations_token_hash_key").on(t.tokenHash),
    // One open invitation per address and organisation.
    uniqueIndex("invitations_open_email_key")
      .on(t.organizationId, sql`lower(${t.email})`)
      .where(sql`${t.acceptedAt} is null and ${t.revokedAt} is null`),
  ],
);
