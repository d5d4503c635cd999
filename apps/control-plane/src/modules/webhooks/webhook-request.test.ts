import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { attemptRecord, isReservedHost, REFUSED_ERROR, refusal, requestHeaders, signatureHeader } from "./webhook-request.ts";

const NOW = new Date("2025-01-02T03:04:05.000Z");

describe("the signature header", () => {
  it("is t=<seconds>,v1=<HMAC-SHA256 of '<t>.<body>' keyed with the whole secret>", () => {
    const body = '{"id":"evt_1"}';
    const expected = createHmac("sha256", "whsec_abc").update(`1700000000.${body}`).digest("hex");
    expect(signatureHeader("whsec_abc", 1700000000, body)).toBe(`t=1700000000,v1=${expected}`);
  });
  it("changes with the body, the time and the secret", () => {
    const base = signatureHeader("whsec_abc", 1, "{}");
    expect(signatureHeader("whsec_abc", 1, "{ }")).not.toBe(base);
    expect(signatureHeader("whsec_abc", 2, "{}")).not.toBe(base);
    expect(signatureHeader("whsec_abd", 1, "{}")).not.toBe(base);
  });
  it("travels with the event name and the delivery id", () => {
    const h = requestHeaders({ id: "del-1", eventType: "deploy.failed" }, "whsec_abc", 5, "{}");
    expect(h).toEqual({
      "content-type": "application/json",
      "user-agent": "Berth-Webhooks/1",
      "berth-event": "deploy.failed",
      "berth-delivery": "del-1",
      "berth-signature": signatureHeader("whsec_abc", 5, "{}"),
    });
  });
});

describe("deliveries that are never sent", () => {
  it.each(["https://hooks.example.com/x", "https://example.org/x", "http://receiver.test/x", "https://a.invalid/", "https://example/x", "not a url"])("%s is a reserved host", (url) => {
    expect(isReservedHost(url)).toBe(true);
  });
  it.each(["https://hooks.acme.io/x", "http://127.0.0.1:8080/x", "https://example.com.evil.io/"])("%s is a real host", (url) => {
    expect(isReservedHost(url)).toBe(false);
  });

  const live = { deletedAt: null, enabled: true, url: "https://hooks.acme.io/x" };
  it("a live subscription with a real host is sent", () => {
    expect(refusal(live, { attempts: 0 }, NOW)).toBeNull();
  });
  it("a deleted or disabled subscription fails without counting a try", () => {
    expect(refusal({ ...live, deletedAt: NOW }, { attempts: 2 }, NOW)).toEqual({ status: "failed", error: "The subscription was deleted" });
    expect(refusal({ ...live, enabled: false }, { attempts: 2 }, NOW)).toEqual({ status: "failed", error: "The subscription is disabled" });
  });
  it("a reserved host fails at once, counted as a try", () => {
    expect(refusal({ ...live, url: "https://x.example.com/" }, { attempts: 2 }, NOW)).toMatchObject({ status: "failed", attempts: 3, lastAttemptAt: NOW });
  });
});

describe("what a try does to the delivery", () => {
  it("any 2xx succeeds and records when", () => {
    expect(attemptRecord({ status: 204, body: "", failure: null }, NOW, false)).toEqual({
      responseStatus: 204,
      responseBody: "",
      error: null,
      lastAttemptAt: NOW,
      status: "succeeded",
      deliveredAt: NOW,
    });
  });
  it("another answer stays pending while tries remain, then fails", () => {
    const answer = { status: 500, body: "oops", failure: null };
    expect(attemptRecord(answer, NOW, false)).toMatchObject({ status: "pending", error: "The receiver answered HTTP 500", responseStatus: 500 });
    expect(attemptRecord(answer, NOW, true)).toMatchObject({ status: "failed", error: "The receiver answered HTTP 500" });
    expect(attemptRecord({ status: 302, body: "", failure: null }, NOW, false).status).toBe("pending");
    expect(attemptRecord(answer, NOW, false)).not.toHaveProperty("deliveredAt");
  });
  it("a refused receiver address fails at once, whatever tries remain, with a generic message and nothing of the answer", () => {
    expect(attemptRecord({ status: null, body: null, failure: null, refused: true }, NOW, false)).toEqual({
      responseStatus: null,
      responseBody: null,
      error: REFUSED_ERROR,
      lastAttemptAt: NOW,
      status: "failed",
    });
    expect(REFUSED_ERROR).toBe("refused: the receiver's address is not allowed");
  });
  it("no answer is a failed request with its reason", () => {
    expect(attemptRecord({ status: null, body: null, failure: "connect ECONNREFUSED" }, NOW, false)).toMatchObject({
      status: "pending",
      error: "Request failed: connect ECONNREFUSED",
      responseStatus: null,
    });
  });
});
