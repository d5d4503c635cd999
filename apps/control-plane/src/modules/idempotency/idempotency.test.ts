import { describe, expect, it } from "vitest";
import { withoutShownOnce } from "./idempotency.ts";

describe("what a replay keeps of a response with shown-once fields", () => {
  it("sets the fields present to null and names them", () => {
    const body = JSON.stringify({ id: "w1", secret: "whsec_x", nested: { token: "t", keep: 1 } });
    const kept = withoutShownOnce(body, ["secret", "nested.token", "absent", "nested.absent.deeper"]);
    expect(JSON.parse(kept.body)).toEqual({ id: "w1", secret: null, nested: { token: null, keep: 1 } });
    expect(kept.withheld).toEqual(["secret", "nested.token"]);
    expect(kept.body).not.toContain("whsec_x");
  });

  it("keeps a body without those fields, or that is not JSON, as it is", () => {
    expect(withoutShownOnce('{"error":"not_found"}', ["secret"])).toEqual({ body: '{"error":"not_found"}', withheld: [] });
    expect(withoutShownOnce("", ["secret"])).toEqual({ body: "", withheld: [] });
  });
});
