// The tier boundaries of platform spec 4.3 and where retry leads, as tables.
import { describe, expect, it } from "vitest";
import { GB, MB, retryTarget, tierOf } from "./migration-states.ts";

describe("tierOf", () => {
  it.each([
    [1, "tier_1"],
    [50 * MB - 1, "tier_1"],
    [50 * MB, "tier_2"],
    [500 * MB, "tier_2"],
    [500 * MB + 1, "tier_3"],
    [5 * GB, "tier_3"],
    [5 * GB + 1, "tier_4"],
    [20 * GB, "tier_4"],
  ])("%i bytes: %s", (size, tier) => expect(tierOf(size)).toBe(tier));
});

describe("retryTarget", () => {
  it("re-analyses a stored backup without analysis, readies an analysed one, sends back to pending without a backup", () => {
    expect(retryTarget({ storageKey: "k", analysis: null })).toEqual({ status: "uploading", reanalyze: true });
    expect(retryTarget({ storageKey: "k", analysis: {} })).toEqual({ status: "ready", reanalyze: false });
    expect(retryTarget({ storageKey: null, analysis: null })).toEqual({ status: "pending", reanalyze: false });
  });
});
