import { describe, expect, it } from "vitest";
import {
  ACTIVE_STATUSES,
  canTransition,
  DEPLOYMENT_STATUSES,
  isActive,
  isTerminal,
  OPERATION_KINDS,
  resultStatus,
  startedStatus,
  toTaskStatus,
  WAITING_STATUSES,
} from "./deployment-state.ts";

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

describe("operation state machine", () => {
  it("active statuses are exactly the ones that are not terminal", () => {
    for (const s of DEPLOYMENT_STATUSES) expect(isActive(s)).toBe(!isTerminal(s));
    expect(ACTIVE_STATUSES).toEqual(["pending", "queued", "building", "deploying", "running"]);
  });

  it("a waiting operation starts as deploying (deploy kinds) or running (the others)", () => {
    expect(OPERATION_KINDS.map((k) => [k, startedStatus(k)])).toEqual([
      ["deploy", "deploying"],
      ["redeploy", "deploying"],
      ["rollback", "deploying"],
      ...OPERATION_KINDS.filter((k) => !["deploy", "redeploy", "rollback"].includes(k)).map((k) => [k, "running"]),
    ]);
    for (const w of WAITING_STATUSES) for (const k of OPERATION_KINDS) expect(canTransition(w, startedStatus(k))).toBe(true);
  });

  it("the agent's result ends an operation: destroyed, success, cancelled or failed", () => {
    expect(resultStatus("destroy", { ok: true })).toBe("destroyed");
    expect(resultStatus("deploy", { ok: true })).toBe("success");
    expect(resultStatus("deploy", { ok: false, errorCode: "cancelled" })).toBe("cancelled");
    expect(resultStatus("restart", { ok: false, errorCode: "health_check_failed" })).toBe("failed");
    for (const from of ACTIVE_STATUSES) for (const to of ["success", "destroyed", "failed", "cancelled"]) expect(canTransition(from, to)).toBe(true);
  });

  it("a finished operation never becomes active again; only a success can become rolled_back", () => {
    const finished = DEPLOYMENT_STATUSES.filter((s) => !isActive(s));
    for (const from of finished) {
      for (const to of DEPLOYMENT_STATUSES) expect(canTransition(from, to)).toBe(from === "success" && to === "rolled_back");
    }
  });

  it("no operation goes back to waiting, and nothing unknown moves", () => {
    for (const from of DEPLOYMENT_STATUSES) for (const to of WAITING_STATUSES) expect(canTransition(from, to)).toBe(false);
    expect(canTransition("exploded", "failed")).toBe(false);
  });
});
