// Judging a DNS answer against the server's public addresses, and reading Caddy's log for
// why a certificate was refused.
import { describe, expect, it } from "vitest";
import { acmeFailures } from "./certificate-probe.ts";
import { judge, mayCertify, recordsToCreate } from "./dns-check.ts";
import { isPublicAddress, publicAddresses } from "./public-addresses.ts";

describe("DNS answers", () => {
  it.each([
    [["203.0.113.7"], ["203.0.113.7"], "ok"],
    [["203.0.113.7", "2001:DB8::7"], ["203.0.113.7", "2001:db8::7"], "ok"],
    [["203.0.113.7", "198.51.100.1"], ["203.0.113.7"], "mismatch"],
    [["198.51.100.1"], ["203.0.113.7"], "mismatch"],
    [[], ["203.0.113.7"], "unresolved"],
    [["198.51.100.1"], [], "unchecked"],
  ] as const)("%j against %j is %s", (resolved, expected, status) => {
    expect(judge(resolved, expected)).toBe(status);
  });

  it("requests certificates for names that point here, or when nobody can tell", () => {
    expect(["ok", "unchecked", "mismatch", "unresolved"].map((status) => mayCertify({ status: status as "ok" }))).toEqual([true, true, false, false]);
  });

  it("says which records to create", () => {
    expect(recordsToCreate("erp.acme.example", ["203.0.113.7", "2001:db8::7"])).toBe("erp.acme.example A 203.0.113.7; erp.acme.example AAAA 2001:db8::7");
  });

  it("counts only globally routable addresses as public, and the administrator's list wins", () => {
    expect(["203.0.113.7", "2001:db8::7", "10.1.2.3", "172.17.0.1", "192.168.1.1", "100.64.0.1", "127.0.0.1", "fe80::1", "fd00::1", "nonsense"].filter(isPublicAddress)).toEqual([
      "203.0.113.7",
      "2001:db8::7",
    ]);
    expect(publicAddresses(["198.51.100.4"])).toEqual(["198.51.100.4"]);
  });
});

describe("Caddy's log", () => {
  const line = (entry: Record<string, unknown>) => JSON.stringify({ level: "error", ts: 1, ...entry });

  it("gives the latest refusal per name, forgotten once a certificate is obtained", () => {
    const log = [
      "not json",
      line({ logger: "tls.obtain", msg: "could not get certificate from issuer", identifier: "a.example", error: "HTTP 400 urn:ietf:params:acme:error:connection - refused" }),
      line({ logger: "tls.obtain", msg: "could not get certificate from issuer", identifier: "b.example", error: "rate limited" }),
      line({ logger: "tls.obtain", msg: "could not get certificate from issuer", identifier: "a.example", error: "HTTP 403 unauthorized" }),
      line({ logger: "tls.obtain", msg: "certificate obtained successfully", identifier: "b.example" }),
      line({ logger: "http.log", msg: "could not get certificate from issuer", identifier: "c.example", error: "other logger" }),
    ].join("\n");
    expect([...acmeFailures(log)]).toEqual([["a.example", "HTTP 403 unauthorized"]]);
  });
});
