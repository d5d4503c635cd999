// The host name rules: what a domain or alias may be, and the generated name.
import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import { checkDomains, environmentAddresses, generatedHostname, normalizeHostname } from "./domains.ts";

const ENV = { id: "3f2a9c1e-0b7d-4e5f-8a6b-1c2d3e4f5a6b", name: "Production", domain: null, aliases: [] as string[] };
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof DomainError ? err.code : "not a DomainError";
  }
  return "no error";
};

describe("a domain or alias", () => {
  it("is stored lowercase", () => {
    expect(normalizeHostname("ERP.Example.COM")).toBe("erp.example.com");
    expect(normalizeHostname("a-b.c-d.example.co.uk")).toBe("a-b.c-d.example.co.uk");
  });
  it.each([
    ["a trailing dot", "erp.example.com."],
    ["an IPv4 address", "192.0.2.10"],
    ["an IPv6 address", "2001:db8::1"],
    ["a single label", "localhost"],
    ["a wildcard", "*.example.com"],
    ["a space", "erp .example.com"],
    ["a leading hyphen", "-erp.example.com"],
    ["an underscore", "erp_1.example.com"],
    ["a label over 63 characters", `${"a".repeat(64)}.example.com`],
    ["a name over 253 characters", `${"a.".repeat(127)}com`],
    ["a URL", "https://erp.example.com"],
    ["an empty string", ""],
  ])("is refused (invalid_domain) when it is %s", (_what, name) => {
    expect(codeOf(() => normalizeHostname(name))).toBe("invalid_domain");
  });
});

describe("the generated name", () => {
  it("is the name's slug and the id's first 8 hex digits under the base domain", () => {
    expect(generatedHostname(ENV, "envs.example.net")).toBe("production-3f2a9c1e.envs.example.net");
    expect(generatedHostname({ ...ENV, name: "Staging (EU) ÉTÉ" }, "b.io")).toBe("staging-eu-ete-3f2a9c1e.b.io");
    expect(generatedHostname({ ...ENV, name: "___" }, "b.io")).toBe("env-3f2a9c1e.b.io");
  });
  it("is one DNS label of at most 63 characters, valid whatever the name", () => {
    for (const name of ["x".repeat(255), `${"ab-".repeat(40)}`, "Ünïcödé ñame", "-", "a--b"]) {
      const host = generatedHostname({ ...ENV, name }, "envs.example.net");
      const label = host.split(".")[0]!;
      expect(label.length, name).toBeLessThanOrEqual(63);
      expect(normalizeHostname(host), name).toBe(host);
    }
  });
  it("gives the URL: the domain first, else the generated name, else none", () => {
    expect(environmentAddresses("envs.example.net").url(ENV)).toBe("https://production-3f2a9c1e.envs.example.net");
    expect(environmentAddresses("envs.example.net").url({ ...ENV, domain: "erp.example.com" })).toBe("https://erp.example.com");
    expect(environmentAddresses(null).url(ENV)).toBeNull();
    expect(environmentAddresses(null).hostname({ ...ENV, domain: "erp.example.com" })).toBe("erp.example.com");
  });
});

describe("a change of domain and aliases", () => {
  it("keeps what is omitted and removes the domain with null", () => {
    const current = { ...ENV, domain: "a.example.com", aliases: ["b.example.com"] };
    expect(checkDomains(current, { aliases: ["C.example.com"] }, null)).toEqual({ domain: "a.example.com", aliases: ["c.example.com"] });
    expect(checkDomains(current, { domain: null }, null)).toEqual({ domain: null, aliases: ["b.example.com"] });
  });
  it("refuses repeated aliases, an alias equal to the domain (in any case) and more than 10", () => {
    expect(codeOf(() => checkDomains(ENV, { domain: "a.example.com", aliases: ["A.example.com"] }, null))).toBe("validation_error");
    expect(codeOf(() => checkDomains(ENV, { aliases: ["b.example.com", "B.EXAMPLE.COM"] }, null))).toBe("validation_error");
    expect(codeOf(() => checkDomains(ENV, { aliases: Array.from({ length: 11 }, (_, i) => `a${i}.example.com`) }, null))).toBe("validation_error");
    expect(codeOf(() => checkDomains(ENV, { aliases: ["ok.example.com", "not a name"] }, null))).toBe("invalid_domain");
  });
  it("refuses names under the base domain, except the environment's own generated one", () => {
    const base = "envs.example.net";
    expect(codeOf(() => checkDomains(ENV, { domain: "other-12345678.envs.example.net" }, base))).toBe("domain_reserved");
    expect(codeOf(() => checkDomains(ENV, { domain: "envs.example.net" }, base))).toBe("domain_reserved");
    expect(codeOf(() => checkDomains(ENV, { aliases: ["deep.x.envs.example.net"] }, base))).toBe("domain_reserved");
    expect(checkDomains(ENV, { domain: "Production-3f2a9c1e.envs.example.net" }, base).domain).toBe("production-3f2a9c1e.envs.example.net");
    // Only a whole label counts: notenvs.example.net is not under envs.example.net.
    expect(checkDomains(ENV, { domain: "notenvs.example.net" }, base).domain).toBe("notenvs.example.net");
    expect(checkDomains(ENV, { domain: "other-12345678.envs.example.net" }, null).domain).toBe("other-12345678.envs.example.net");
  });
});
