import { describe, expect, it } from "vitest";
import { deployTestsOf, withoutDemoByDefault } from "./stage-builds.ts";

describe("what a stage asks of its deploys", () => {
  it("development: installs the repository's modules, tests them and serves anyway; demo data", () => {
    expect(deployTestsOf({ stage: "development", requirePassingTests: false })).toEqual({ install_new_modules: true, require_passing: false });
    // The setting is a staging one: a development build serves whatever its tests say.
    expect(deployTestsOf({ stage: "development", requirePassingTests: true })).toEqual({ install_new_modules: true, require_passing: false });
    expect(withoutDemoByDefault("development")).toBe(false);
  });

  it("staging: tests only when it requires them to pass; production: never; neither gets demo data", () => {
    expect(deployTestsOf({ stage: "staging", requirePassingTests: false })).toBeUndefined();
    expect(deployTestsOf({ stage: "staging", requirePassingTests: true })).toEqual({ install_new_modules: false, require_passing: true });
    expect(deployTestsOf({ stage: "production", requirePassingTests: true })).toBeUndefined();
    expect(withoutDemoByDefault("staging")).toBe(true);
    expect(withoutDemoByDefault("production")).toBe(true);
  });
});
