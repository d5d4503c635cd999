import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { negotiateVersion, PROTOCOL_VERSIONS } from "./versions.ts";

describe("negotiateVersion", () => {
  it("picks the highest common version", () => {
    expect(negotiateVersion([1, 2, 3], [2, 3, 4])).toBe(3);
    expect(negotiateVersion([1], [3, 1])).toBe(1);
    expect(negotiateVersion(PROTOCOL_VERSIONS, PROTOCOL_VERSIONS)).toBe(1);
  });

  it("returns null without a common version", () => {
    expect(negotiateVersion([1], [2])).toBeNull();
    expect(negotiateVersion([], [1])).toBeNull();
  });

  it("is symmetric and picks a version both speak", () => {
    const versions = fc.array(fc.integer({ min: 1, max: 20 }), { maxLength: 8 });
    fc.assert(
      fc.property(versions, versions, (a, b) => {
        const chosen = negotiateVersion(a, b);
        expect(negotiateVersion(b, a)).toBe(chosen);
        const common = a.filter((v) => b.includes(v));
        expect(chosen).toBe(common.length === 0 ? null : Math.max(...common));
      }),
    );
  });
});
