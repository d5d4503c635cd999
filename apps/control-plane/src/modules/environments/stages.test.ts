// The stage rules on their own: every (from, to) pair a PATCH may ask, the stage of a new
// environment with and without a production, and what a promotion needs.
import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import { checkStageChange, previousStageOf, stageOfNew, STAGES, type Stage } from "./stages.ts";

const code = (fn: () => unknown) => {
  try {
    fn();
    return "allowed";
  } catch (err) {
    return err instanceof DomainError ? err.code : String(err);
  }
};
const production = { id: "p", name: "main", isActive: true };

describe("a PATCH of the stage", () => {
  const allowed: [Stage, Stage][] = [
    ["staging", "development"],
    ["development", "staging"],
    ...STAGES.map((s) => [s, s] as [Stage, Stage]),
  ];
  for (const from of STAGES) {
    for (const to of STAGES) {
      const expected = allowed.some(([a, b]) => a === from && b === to) ? "allowed" : "stage_change_refused";
      it(`${from} -> ${to}: ${expected}`, () => expect(code(() => checkStageChange(from, to))).toBe(expected));
    }
  }
});

describe("a new environment's stage", () => {
  it("defaults to production without one, development with one", () => {
    expect(stageOfNew(undefined, undefined)).toBe("production");
    expect(stageOfNew(undefined, production)).toBe("development");
    expect(stageOfNew("staging", production)).toBe("staging");
  });
  it("refuses a second production, naming the first (and saying when it is destroyed)", () => {
    expect(() => stageOfNew("production", { ...production, isActive: false })).toThrow('"main" (p, destroyed)');
  });
});

describe("a promotion", () => {
  it("needs previous_stage only while another environment is production", () => {
    expect(previousStageOf("x", undefined, undefined)).toBeNull();
    expect(previousStageOf("p", production, undefined)).toBeNull();
    expect(code(() => previousStageOf("x", production, undefined))).toBe("previous_stage_required");
    expect(previousStageOf("x", production, "development")).toBe("development");
  });
});
