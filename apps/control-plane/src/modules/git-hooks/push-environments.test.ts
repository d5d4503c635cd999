import { describe, expect, it } from "vitest";
import { branchEnvironmentName, stopCandidates } from "./push-environments.ts";
import type { RunningDevelopment } from "./push-environments.repo.ts";

describe("the name of a branch's development environment", () => {
  it("is the branch, lowercased, with each run of other characters one hyphen", () => {
    expect(branchEnvironmentName("feature/Invoice#12", [])).toBe("feature-invoice-12");
    expect(branchEnvironmentName("fix_rounding.v2", [])).toBe("fix_rounding.v2");
    expect(branchEnvironmentName("--a//b--", [])).toBe("a-b");
  });
  it("is never empty", () => {
    expect(branchEnvironmentName("///", [])).toBe("development");
  });
  it("is made unique among the project's names, case-insensitively, with -2, -3, …", () => {
    expect(branchEnvironmentName("staging", ["Staging"])).toBe("staging-2");
    expect(branchEnvironmentName("feature/x", ["feature-x", "FEATURE-X-2"])).toBe("feature-x-3");
  });
  it("fits the 255 characters of a name, suffix included", () => {
    const long = "a".repeat(400);
    expect(branchEnvironmentName(long, []).length).toBeLessThanOrEqual(255);
    expect(branchEnvironmentName(long, [branchEnvironmentName(long, [])]).length).toBeLessThanOrEqual(255);
  });
});

describe("which development environments the limit stops", () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
  const env = (id: string, o: Partial<RunningDevelopment> = {}): RunningDevelopment => ({ id, status: "running", activeKind: null, lastDeployedAt: at(0), createdAt: at(0), ...o });

  it("none while one more stays within the limit", () => {
    expect(stopCandidates([env("a")], 2)).toEqual({ need: 0, idle: ["a"] });
  });
  it("the idle ones, least recently deployed first (never deployed before all)", () => {
    const out = stopCandidates([env("new", { lastDeployedAt: at(30) }), env("old", { lastDeployedAt: at(10) }), env("never", { lastDeployedAt: null })], 3);
    expect(out).toEqual({ need: 1, idle: ["never", "old", "new"] });
  });
  it("passes over busy ones and those still deploying", () => {
    const out = stopCandidates([env("busy", { activeKind: "deploy" }), env("deploying", { status: "deploying" }), env("idle")], 2);
    expect(out).toEqual({ need: 2, idle: ["idle"] });
  });
  it("does not count one being stopped or destroyed", () => {
    expect(stopCandidates([env("stopping", { activeKind: "stop" }), env("going", { activeKind: "destroy" })], 1)).toEqual({ need: 0, idle: [] });
  });
});
