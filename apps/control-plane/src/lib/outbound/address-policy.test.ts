import { describe, expect, it } from "vitest";
import { allowsAddress, isRefusedName, literalRefusal, mayConnect, parseAllowList, refusedRange } from "./address-policy.ts";

describe("which addresses are refused", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"], // AWS, GCP, Azure metadata
    ["169.254.0.1", "linkLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["100.100.100.200", "carrierGradeNat"], // Alibaba metadata
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.192", "reserved"], // Oracle metadata
    ["192.0.2.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["198.18.0.1", "reserved"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "linkLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fd00:ec2::254", "uniqueLocal"], // AWS metadata over IPv6
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"], // IPv4-mapped: judged by the IPv4 address inside
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "linkLocal"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["64:ff9b::7f00:1", "rfc6052"], // NAT64 of 127.0.0.1
    ["2002:7f00:1::", "6to4"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
    ["2001:db8::1", "reserved"],
    ["not an address", "invalid"],
    ["", "invalid"],
  ])("%s is refused (%s)", (address, range) => {
    expect(refusedRange(address)).toBe(range);
  });

  it.each(["8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.1", "172.15.255.255", "172.32.0.1", "192.169.0.1", "169.253.255.255", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"])(
    "%s is a public address",
    (address) => {
      expect(refusedRange(address)).toBeNull();
    },
  );

  it.each(["localhost", "LOCALHOST.", "api.localhost", "metadata.google.internal", "metadata.goog", "instance-data", "[metadata]"])("the name %s is refused before any lookup", (name) => {
    expect(isRefusedName(name)).toBe(true);
  });
  it.each(["hooks.acme.io", "localhost.acme.io", "metadata.acme.io"])("the name %s is not", (name) => {
    expect(isRefusedName(name)).toBe(false);
  });
});

describe("the operator's allow-list", () => {
  const list = parseAllowList(" 127.0.0.1, 10.0.0.0/8,Hooks.Internal. ,fd00::/8,[::1], ::ffff:192.168.0.0/112");

  it("takes addresses, CIDR ranges (IPv4-mapped ones as IPv4) and host names", () => {
    expect([...list.hosts]).toEqual(["hooks.internal"]);
    for (const a of ["127.0.0.1", "::ffff:127.0.0.1", "10.200.0.1", "fd12::1", "::1", "192.168.3.4"]) expect(allowsAddress(list, a)).toBe(true);
    for (const a of ["127.0.0.2", "11.0.0.1", "fe80::1", "::2", "192.169.0.1", "garbage"]) expect(allowsAddress(list, a)).toBe(false);
  });

  it("an empty setting allows nothing", () => {
    expect(parseAllowList("")).toEqual({ hosts: new Set(), ranges: [] });
    expect(parseAllowList(" , ")).toEqual({ hosts: new Set(), ranges: [] });
  });

  it.each(["10.0.0.0/33", "10.0.0.0/", "http://hooks.internal", "hooks internal", "a..b", "-bad.host", "hooks.internal:8080"])("refuses the entry %s", (entry) => {
    expect(() => parseAllowList(entry)).toThrow(/not a/);
  });

  it("opens exceptions for literals in the URL and for resolved addresses", () => {
    const none = parseAllowList([]);
    expect(literalRefusal(none, "127.0.0.1")).toBe("loopback");
    expect(literalRefusal(list, "127.0.0.1")).toBeNull();
    expect(literalRefusal(list, "127.0.0.2")).toBe("loopback");
    expect(literalRefusal(none, "localhost")).toBe("refusedName");
    expect(literalRefusal(parseAllowList("localhost"), "localhost")).toBeNull();
    expect(literalRefusal(none, "hooks.acme.io")).toBeNull(); // a name: judged after resolution
    expect(literalRefusal(none, "8.8.8.8")).toBeNull();

    expect(mayConnect(none, "hooks.acme.io", "93.184.215.14")).toBe(true);
    expect(mayConnect(none, "hooks.acme.io", "127.0.0.1")).toBe(false);
    expect(mayConnect(list, "hooks.acme.io", "10.1.2.3")).toBe(true); // the address is listed
    expect(mayConnect(list, "hooks.internal", "172.20.0.5")).toBe(true); // the name is listed
    expect(mayConnect(list, "hooks.acme.io", "172.20.0.5")).toBe(false);
  });
});
