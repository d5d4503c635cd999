import { describe, expect, it } from "vitest";
import { DEPLOYMENT_STATUSES, isTerminal, toTaskStatus } from "./deployment-status.ts";

describe("task status projection", () => {
  it.each([
    ["pending", "pending", false],
    ["queued", "queued", false],
    ["building", "running", false],
    ["deploying", "running", false],
    ["running", "running", false],
    ["success", "completed", true],
    ["failed", "failed", true],
    ["cancelled", "cancelled", true],
    ["rolled_back", "completed", true],
    ["destroyed", "completed", true],
  ])("%s is shown to the public API as %s", (stored, task, terminal) => {
    expect(toTaskStatus(stored)).toBe(task);
    expect(isTerminal(stored)).toBe(terminal);
  });

  it("covers every stored status", () => {
    for (const s of DEPLOYMENT_STATUSES) expect(() => toTaskStatus(s)).not.toThrow();
  });

  it("refuses a status it does not know rather than guessing", () => {
    expect(() => toTaskStatus("exploded")).toThrow(/unknown deployment status/);
  });
});
