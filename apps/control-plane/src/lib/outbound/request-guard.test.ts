// The guard against real sockets on loopback. No test connects to any other address: a
// refusal happens before connecting, and "allowed" targets are loopback on the allow-list.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createRequestGuard, failureKind, OutboundFailure, OutboundRefused, type ResolvedAddress, type Resolver } from "./request-guard.ts";

/** A loopback server that counts every TCP connection, whatever comes over it. */
let server: Server;
let port: number;
let connections = 0;
const requests: { method: string; url: string; body: string }[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method ?? "", url: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") });
      if (req.url === "/redirect") {
        res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" });
        res.end("moved");
      } else if (req.url === "/big") {
        res.end("y".repeat(10_000));
      } else if (req.url !== "/silent") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("secret internal answer");
      }
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  connections = 0;
  requests.length = 0;
});

/** A resolver answering from a table (unknown names do not exist), counting its calls. */
function resolver(table: Record<string, ResolvedAddress[] | (() => ResolvedAddress[])>) {
  const calls: string[] = [];
  const resolve: Resolver = async (name) => {
    calls.push(name);
    const entry = table[name];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
    return typeof entry === "function" ? entry() : entry;
  };
  return { resolve, calls };
}
const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

async function refusal(p: Promise<unknown>): Promise<OutboundRefused> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundRefused);
  expect((err as Error).message).toBe("refused: the target's address is not allowed");
  return err as OutboundRefused;
}

describe("targets refused without an allow-list", () => {
  it.each([
    ["http://127.0.0.1:PORT/x", "loopback"],
    ["http://127.1:PORT/x", "loopback"], // the URL parser normalises short forms
    ["http://2130706433:PORT/x", "loopback"],
    ["http://0x7f.0.0.1:PORT/x", "loopback"],
    ["http://[::ffff:127.0.0.1]:PORT/x", "loopback"],
    ["http://[::1]:PORT/x", "loopback"],
    ["http://0.0.0.0:PORT/x", "unspecified"],
    ["http://[::]:PORT/x", "unspecified"],
    ["http://169.254.169.254/latest/meta-data/", "linkLocal"],
    ["http://100.64.0.1/", "carrierGradeNat"],
    ["http://localhost:PORT/x", "refusedName"],
    ["http://metadata.google.internal/computeMetadata/v1/", "refusedName"],
    ["ftp://127.0.0.1/", "protocol"],
    ["not a url", "invalidUrl"],
  ])("%s (%s): nothing is looked up, nothing connects", async (template, reason) => {
    const dns = resolver({});
    const guard = createRequestGuard({ resolve: dns.resolve });
    const url = template.replace("PORT", String(port));
    expect((await refusal(guard.request(url, { method: "POST", body: "{}" }))).reason).toBe(reason);
    expect((await refusal(guard.check(url))).reason).toBe(reason);
    expect(guard.refusalWithoutLookup(url)).toBe(reason);
    expect(dns.calls).toEqual([]);
    expect(connections).toBe(0);
  });

  it.each([
    ["a name that resolves to loopback", [v4("127.0.0.1")]],
    ["an IPv4-mapped IPv6 answer", [v6("::ffff:127.0.0.1")]],
    ["an IPv6 loopback answer", [v6("::1")]],
    ["the metadata address", [v4("169.254.169.254")]],
    ["an answer mixing a public and a private address", [v4("93.184.215.14"), v4("127.0.0.1")]],
  ])("%s is refused after resolution, before connecting", async (_what, answer) => {
    const dns = resolver({ "hooks.attacker.io": answer });
    const guard = createRequestGuard({ resolve: dns.resolve });
    expect(guard.refusalWithoutLookup(`http://hooks.attacker.io:${port}/x`)).toBeNull(); // a name: judged after resolution
    await refusal(guard.request(`http://hooks.attacker.io:${port}/x`, { method: "POST", body: "{}" }));
    expect(dns.calls).toEqual(["hooks.attacker.io"]);
    expect(connections).toBe(0);
    expect(requests).toEqual([]);
  });

  it("DNS rebinding: an answer that turns to loopback after a passing check never gets a connection", async () => {
    // First answer public (the check passes), every later one loopback: what a rebinding DNS server does.
    let n = 0;
    const dns = resolver({ "rebind.attacker.io": () => (n++ === 0 ? [v4("93.184.215.14")] : [v4("127.0.0.1")]) });
    const guard = createRequestGuard({ resolve: dns.resolve });
    const url = `http://rebind.attacker.io:${port}/x`;
    await guard.check(url); // passes: advice only
    await refusal(guard.request(url, { method: "POST", body: "{}" })); // resolves again at connect time, and refuses
    await refusal(guard.request(url));
    expect(dns.calls).toEqual(["rebind.attacker.io", "rebind.attacker.io", "rebind.attacker.io"]);
    expect(connections).toBe(0);
  });

  it("the connection goes to the very address that was checked: one lookup per request", async () => {
    // A resolver that would answer loopback on any second lookup: the request never asks twice.
    let n = 0;
    const dns = resolver({ "hooks.internal": () => (n++ === 0 ? [v4("127.0.0.1")] : [v4("169.254.169.254")]) });
    const guard = createRequestGuard({ allow: "127.0.0.1", resolve: dns.resolve });
    const res = await guard.request(`http://hooks.internal:${port}/pinned`);
    expect(res.status).toBe(200);
    expect(dns.calls).toEqual(["hooks.internal"]);
    expect(connections).toBe(1);
    await refusal(guard.request(`http://hooks.internal:${port}/pinned`)); // the second answer is the metadata address
    expect(connections).toBe(1);
  });

  it("a name that does not resolve is a failure with a generic message", async () => {
    const guard = createRequestGuard({ resolve: resolver({}).resolve });
    const err = await guard.request("https://nowhere.acme.io/").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundFailure);
    expect((err as OutboundFailure).kind).toBe("dns");
    expect((err as Error).message).toBe("the host name could not be resolved");
  });
});

describe("targets on the operator's allow-list", () => {
  it("a listed address is reached; the answer's status and capped body come back", async () => {
    const guard = createRequestGuard({ allow: ["127.0.0.1"] });
    expect(guard.isListed(`http://127.0.0.1:${port}/`)).toBe(true);
    expect(guard.isListed(`http://127.0.0.2:${port}/`)).toBe(false);
    const res = await guard.request(`http://127.0.0.1:${port}/hook?a=1`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"x":1}' });
    expect(res).toMatchObject({ status: 200, body: "secret internal answer" });
    expect(requests).toEqual([{ method: "POST", url: "/hook?a=1", body: '{"x":1}' }]);
    const big = await guard.request(`http://127.0.0.1:${port}/big`, { maxResponseBytes: 100 });
    expect(big.body).toBe("y".repeat(100));
  });

  it("a listed name may resolve to a private address; other names may not", async () => {
    const dns = resolver({ "hooks.internal": [v4("127.0.0.1")], "other.internal": [v4("127.0.0.1")] });
    const guard = createRequestGuard({ allow: "hooks.internal", resolve: dns.resolve });
    expect(guard.isListed(`http://hooks.internal:${port}/`)).toBe(true);
    expect((await guard.request(`http://hooks.internal:${port}/`)).status).toBe(200);
    await refusal(guard.request(`http://other.internal:${port}/`));
    await refusal(guard.request(`http://127.0.0.1:${port}/`)); // the name is listed, not its address
    expect(connections).toBe(1);
  });

  it("a redirect is not followed: the 3xx is the answer", async () => {
    const guard = createRequestGuard({ allow: "127.0.0.1" });
    const res = await guard.request(`http://127.0.0.1:${port}/redirect`);
    expect(res.status).toBe(302);
    expect(requests.map((r) => r.url)).toEqual(["/redirect"]);
  });

  it("no answer in time, or a closed port, is a failure without the low-level error text", async () => {
    const guard = createRequestGuard({ allow: "127.0.0.1" });
    const slow = await guard.request(`http://127.0.0.1:${port}/silent`, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(OutboundFailure);
    expect((slow as Error).message).toBe("no answer in time");

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await guard.request(`http://127.0.0.1:${closedPort}/`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OutboundFailure);
    expect((refused as Error).message).toBe("the connection was refused");
    expect((refused as Error).message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
  });
});

describe("low-level errors", () => {
  it.each([
    ["ENOTFOUND", "dns"],
    ["ECONNREFUSED", "connection_refused"],
    ["ECONNRESET", "connection_reset"],
    ["ETIMEDOUT", "timeout"],
    ["EHOSTUNREACH", "unreachable"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "tls"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "tls"],
    ["HPE_INVALID_CONSTANT", "protocol"],
    ["EWHATEVER", "other"],
  ])("%s is a %s failure", (code, kind) => {
    expect(failureKind(Object.assign(new Error("x"), { code }))).toBe(kind);
  });
});
