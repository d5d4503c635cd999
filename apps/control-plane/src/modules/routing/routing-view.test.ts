// What people see of an environment's certificates and DNS from the agent's last report.
import { describe, expect, it } from "vitest";
import type { RoutedDomain } from "@berth/protocol";
import { certificateView, dnsView, proxyView, type StoredRouting } from "./routing-view.ts";

const name = (n: string, cert: Partial<RoutedDomain["certificate"]>, dns: Partial<RoutedDomain["dns"]> = {}): RoutedDomain => ({
  name: n,
  dns: { status: "ok", resolved: ["192.0.2.1"], expected: ["192.0.2.1"], ...dns },
  certificate: { status: "valid", not_after: "2027-01-01T00:00:00.000Z", issuer: "Test CA", error: null, ...cert },
});
const routing = (...domains: RoutedDomain[]): StoredRouting => ({ mode: "serving", domains, checked_at: "2026-11-26T07:00:00.000Z" });

describe("an environment's certificate", () => {
  it("is none without a route", () => {
    expect(certificateView(null)).toEqual({ status: "none", not_after: null, error: null, checked_at: null });
  });
  it("is valid with the earliest expiry when every name is", () => {
    const r = routing(name("a.example.com", { not_after: "2027-03-01T00:00:00.000Z" }), name("b.example.com", { not_after: "2027-02-01T00:00:00.000Z" }));
    expect(certificateView(r)).toEqual({ status: "valid", not_after: "2027-02-01T00:00:00.000Z", error: null, checked_at: "2026-11-26T07:00:00.000Z" });
  });
  it("is the worst of its names: error > not_requested > pending > valid", () => {
    const valid = name("v.example.com", {});
    const pending = name("p.example.com", { status: "pending", not_after: null });
    const notRequested = name("n.example.com", { status: "not_requested", not_after: null }, { status: "mismatch" });
    const error = name("e.example.com", { status: "error", not_after: null, error: "urn:ietf:params:acme:error:rateLimited" });
    expect(certificateView(routing(valid, pending)).status).toBe("pending");
    expect(certificateView(routing(pending, notRequested, valid)).status).toBe("not_requested");
    const worst = certificateView(routing(valid, notRequested, error, pending));
    expect(worst).toMatchObject({ status: "error", error: "urn:ietf:params:acme:error:rateLimited", not_after: "2027-01-01T00:00:00.000Z" });
  });
});

describe("an environment's DNS", () => {
  it("is the answer for its primary name, unchecked when the route does not hold it", () => {
    const r = routing(name("a.example.com", {}, { status: "mismatch", resolved: ["198.51.100.7"] }), name("b.example.com", {}));
    expect(dnsView(r, "a.example.com")).toEqual({ status: "mismatch", resolved: ["198.51.100.7"], expected: ["192.0.2.1"] });
    expect(dnsView(r, "c.example.com")).toEqual({ status: "unchecked", resolved: [], expected: [] });
    expect(dnsView(null, "a.example.com")).toEqual({ status: "unchecked", resolved: [], expected: [] });
  });
});

it("a server's proxy is null before its first report", () => {
  expect(proxyView(null)).toBeNull();
  const p = { running: true, image: "caddy:2", public_addresses: ["192.0.2.1"], error: null, checked_at: "2026-11-26T07:00:00.000Z" };
  expect(proxyView(p)).toEqual(p);
});
