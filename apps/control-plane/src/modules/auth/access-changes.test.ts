import { describe, expect, it } from "vitest";
import { accessChangePayload, parseAccessChange, type AccessChange } from "./access-changes.ts";

describe("access change notifications", () => {
  it("travel as text and come back as they were", () => {
    const changes: AccessChange[] = [
      { kind: "membership", organizationId: "9b1de0a4-1f7e-4a53-9c0e-5f1c2d3e4f50", userId: "0f8e7d6c-5b4a-4392-8170-6e5d4c3b2a19" },
      { kind: "session", sessionId: "3c2b1a09-8f7e-4d6c-9b5a-493827161504" },
    ];
    for (const c of changes) expect(parseAccessChange(accessChangePayload(c))).toEqual(c);
  });
  it("anything else is ignored", () => {
    for (const p of ["", "session", "session:", "membership:a", "membership:a:b:c", "session:a:b", "other:a"]) expect(parseAccessChange(p)).toBeNull();
  });
});
