import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import { agentState, checkRequest, SUPPORT_COMMANDS, type IssueRequest } from "./support.service.ts";

const ENV = "00000000-0000-4000-8000-000000000001";
const refusedAt = (req: IssueRequest): string | undefined => {
  try {
    checkRequest(req);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("validation_error");
    return ((err as DomainError).details as { path: string }[])[0]!.path;
  }
};

describe("which support commands take an environment", () => {
  it.each(["restart", "stop", "start", "redeploy", "backup", "logs.tail"] as const)("%s needs one", (type) => {
    expect(refusedAt({ type, reason: "customer asked" })).toBe("body/environment_id");
    expect(checkRequest({ type, environment_id: ENV, reason: "customer asked" })).toEqual({ reason: "customer asked", needsEnvironment: true });
  });
  it("diagnostics is of the server and refuses one", () => {
    expect(refusedAt({ type: "diagnostics", environment_id: ENV, reason: "customer asked" })).toBe("body/environment_id");
    expect(checkRequest({ type: "diagnostics", reason: "customer asked" })).toEqual({ reason: "customer asked", needsEnvironment: false });
  });
  it("covers every command there is", () => {
    expect([...SUPPORT_COMMANDS].sort()).toEqual(["backup", "diagnostics", "logs.tail", "redeploy", "restart", "start", "stop"]);
  });
});

describe("a request's other fields", () => {
  it("needs a reason of at least 5 characters, not counting surrounding blanks", () => {
    expect(refusedAt({ type: "diagnostics", reason: "  abcd   " })).toBe("body/reason");
    expect(checkRequest({ type: "diagnostics", reason: "  abcde " }).reason).toBe("abcde");
  });
  it("takes lines for logs.tail only", () => {
    expect(refusedAt({ type: "restart", environment_id: ENV, lines: 10, reason: "customer asked" })).toBe("body/lines");
    expect(refusedAt({ type: "logs.tail", environment_id: ENV, lines: 10, reason: "customer asked" })).toBeUndefined();
  });
});

describe("the agent's state on the console", () => {
  it("is pending until enrolled, online only when connected with a fresh heartbeat", () => {
    expect(agentState(false, true, true)).toBe("pending");
    expect(agentState(true, true, true)).toBe("online");
    expect(agentState(true, true, false)).toBe("offline");
    expect(agentState(true, false, true)).toBe("offline");
  });
});
