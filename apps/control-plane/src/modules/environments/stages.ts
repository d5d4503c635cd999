// An environment's stage, with the rules Odoo.sh has: one production per project, which
// changes only by a promotion that says what the previous production becomes; staging and
// development move freely between each other.
import { DomainError } from "../../lib/errors.ts";

export const STAGES = ["production", "staging", "development"] as const;
export type Stage = (typeof STAGES)[number];

/** The stages a PATCH may set, and what a production becomes when another is promoted. */
export const OTHER_STAGES = ["staging", "development"] as const;
export type OtherStage = (typeof OTHER_STAGES)[number];

/** The project's production environment as the rules name it (destroyed ones included: a deploy brings them back). */
export interface Production {
  id: string;
  name: string;
  isActive: boolean;
}

const describe = (p: Production) => `${JSON.stringify(p.name)} (${p.id}${p.isActive ? "" : ", destroyed"})`;

/**
 * The stage of a new environment: the one asked for, else production when the project has
 * none, else development. A second production is refused (production_exists).
 */
export function stageOfNew(wanted: Stage | undefined, production: Production | undefined): Stage {
  if (wanted === undefined) return production ? "development" : "production";
  if (wanted === "production" && production) throw productionExists(production);
  return wanted;
}

export const productionExists = (p: Production) =>
  new DomainError(
    "production_exists",
    `The project already has a production environment, ${describe(p)}; create this one as staging or development, then promote it (POST …/promote says what ${JSON.stringify(p.name)} becomes)`,
  );

/** A PATCH of the stage: staging and development only, both ways; production moves only by a promotion. */
export function checkStageChange(from: Stage, to: Stage): void {
  if (from === to) return;
  if (to === "production") {
    throw new DomainError("stage_change_refused", "An environment becomes production only by a promotion: POST …/promote, which says what the current production becomes");
  }
  if (from === "production") {
    throw new DomainError("stage_change_refused", "The production environment's stage changes only when another environment is promoted to production (POST …/promote on that one)");
  }
}

/**
 * What the current production becomes when `target` is promoted: previous_stage, which is
 * required while the project has another production (previous_stage_required).
 */
export function previousStageOf(targetId: string, production: Production | undefined, previous: OtherStage | undefined): OtherStage | null {
  if (!production || production.id === targetId) return null;
  if (previous === undefined) {
    throw new DomainError("previous_stage_required", `Say what the current production ${describe(production)} becomes: previous_stage staging or development`);
  }
  return previous;
}
