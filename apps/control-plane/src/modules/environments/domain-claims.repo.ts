// Who holds a host name: the claims' SQL, inside the caller's transaction or on the pool. A claim is
// pending until proven (domain-verification.ts), then verified. A name is taken for an
// environment when another environment holds it verified, or when another environment of
// the same organisation claims it at all; pending claims of other organisations do not
// block (one of them proves the name, or none holds it). The partial unique indexes of
// environment_domains keep both rules whichever transaction commits first.
import { and, eq, inArray, ne, notInArray, or, sql } from "drizzle-orm";
import { environmentDomains, environments, type Database } from "@berth/db";
import { isUniqueViolation } from "../../lib/errors.ts";

export type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];
export type DomainClaimRow = typeof environmentDomains.$inferSelect;
export const CLAIM_STATES = ["pending", "verified", "released"] as const;
export type ClaimState = (typeof CLAIM_STATES)[number];

/**
 * Makes `names` the environment's live claims: claims of names it no longer lists go (released
 * ones too), those it keeps keep their state and token, new ones start pending. Returns the
 * first name that is taken (see above), or undefined when every name was claimed.
 */
export async function claimNames(tx: Tx, env: { id: string; organizationId: string }, names: string[]): Promise<string | undefined> {
  await tx
    .delete(environmentDomains)
    .where(and(eq(environmentDomains.environmentId, env.id), names.length > 0 ? notInArray(environmentDomains.name, names) : undefined));
  if (names.length === 0) return undefined;
  const mine = await tx.select().from(environmentDomains).where(eq(environmentDomains.environmentId, env.id));
  const others = await tx
    .select({ name: environmentDomains.name })
    .from(environmentDomains)
    .where(
      and(
        inArray(environmentDomains.name, names),
        ne(environmentDomains.environmentId, env.id),
        or(eq(environmentDomains.status, "verified"), and(eq(environmentDomains.organizationId, env.organizationId), ne(environmentDomains.status, "released"))),
      ),
    );
  const blocked = new Set(others.map((o) => o.name));
  for (const name of names) {
    const held = mine.find((m) => m.name === name);
    if (blocked.has(name)) return name;
    if (held && held.status !== "released") continue;
    try {
      await tx.execute(sql`savepoint claim`);
      if (held) await tx.update(environmentDomains).set({ status: "pending", verifiedAt: null }).where(and(eq(environmentDomains.environmentId, env.id), eq(environmentDomains.name, name)));
      else await tx.insert(environmentDomains).values({ name, environmentId: env.id, organizationId: env.organizationId });
      await tx.execute(sql`release savepoint claim`);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      await tx.execute(sql`rollback to savepoint claim`);
      return name;
    }
  }
  return undefined;
}

/** The claims of these environments (released ones included: their owner is told why the name left). */
export async function claimsOf(db: Database, environmentIds: string[]): Promise<DomainClaimRow[]> {
  if (environmentIds.length === 0) return [];
  return db.select().from(environmentDomains).where(inArray(environmentDomains.environmentId, environmentIds));
}

/** Pending claims of active environments, oldest check first (the verification job's pass). */
export async function pendingClaims(db: Database, limit: number): Promise<DomainClaimRow[]> {
  return db
    .select({ claim: environmentDomains })
    .from(environmentDomains)
    .innerJoin(environments, eq(environments.id, environmentDomains.environmentId))
    .where(and(eq(environmentDomains.status, "pending"), eq(environments.isActive, true)))
    .orderBy(sql`${environmentDomains.checkedAt} asc nulls first`)
    .limit(limit)
    .then((rows) => rows.map((r) => r.claim));
}

/** Records a check that did not prove the claim. */
export async function markChecked(db: Database, claim: Pick<DomainClaimRow, "environmentId" | "name">, at: Date): Promise<void> {
  await db.update(environmentDomains).set({ checkedAt: at }).where(and(eq(environmentDomains.environmentId, claim.environmentId), eq(environmentDomains.name, claim.name)));
}

/**
 * The claim is proven: it becomes the name's one verified claim, every other live claim of the
 * name is released and the name leaves those environments (domain set to null, alias
 * removed). Returns the environments that lost the name (their servers are told), or null when
 * the claim is gone or another claim was verified first (this one is then released).
 */
export async function proveClaim(db: Database, claim: Pick<DomainClaimRow, "environmentId" | "name">, at: Date): Promise<(typeof environments.$inferSelect)[] | null> {
  try {
    return await db.transaction(async (tx) => {
      const [won] = await tx
        .update(environmentDomains)
        .set({ status: "verified", verifiedAt: at, checkedAt: at })
        .where(and(eq(environmentDomains.environmentId, claim.environmentId), eq(environmentDomains.name, claim.name), eq(environmentDomains.status, "pending")))
        .returning();
      if (!won) return null;
      const lost = await tx
        .update(environmentDomains)
        .set({ status: "released", checkedAt: at })
        .where(and(eq(environmentDomains.name, claim.name), ne(environmentDomains.environmentId, claim.environmentId), eq(environmentDomains.status, "pending")))
        .returning({ environmentId: environmentDomains.environmentId });
      if (lost.length === 0) return [];
      return tx
        .update(environments)
        .set({
          domain: sql`case when ${environments.domain} = ${claim.name} then null else ${environments.domain} end`,
          aliases: sql`array_remove(${environments.aliases}, ${claim.name}::text)`,
          updatedAt: at,
        })
        .where(inArray(environments.id, lost.map((l) => l.environmentId)))
        .returning();
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // Another environment proved the name in the meantime: this claim lost it.
    await db
      .update(environmentDomains)
      .set({ status: "released", checkedAt: at })
      .where(and(eq(environmentDomains.environmentId, claim.environmentId), eq(environmentDomains.name, claim.name), eq(environmentDomains.status, "pending")));
    return null;
  }
}

/** An environment's name and its server's public addresses (what its agent reports of its proxy), for domain-verification.ts. */
export async function proofTargetOf(db: Database, environmentId: string): Promise<{ id: string; name: string; addresses: string[] | null } | null> {
  const { rows } = await db.$client.query<{ id: string; name: string; addresses: string[] | null }>(
    `select e.id, e.name, s.proxy->'public_addresses' as addresses
       from environments e join projects p on p.id = e.project_id
       left join servers s on s.id = coalesce(e.server_id, p.server_id)
      where e.id = $1`,
    [environmentId],
  );
  return rows[0] ?? null;
}
