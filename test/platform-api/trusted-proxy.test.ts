// Limits per address behind a reverse proxy (security finding 11): X-Forwarded-For is believed
// only from the proxies BERTH_TRUST_PROXY names, so behind one each client is counted on its
// own, and without it nobody can pick their address by sending the header.
import { afterAll, describe, expect, it } from "vitest";
import { startControlPlane, startOfRateWindow, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient } from "../support/http.ts";

const started: TestControlPlane[] = [];
afterAll(async () => {
  for (const cp of started) await cp.close();
});

/** Registrations are limited to 10 a minute per address (auth.routes.ts). */
async function register(cp: TestControlPlane, from: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await platformClient(cp.app, null, { "x-forwarded-for": from }).post("/auth/register", {
      email: `p-${from}-${i}-${Date.now()}@example.test`,
      name: "P",
      password: "correct horse battery staple",
      organization_name: "P",
    });
    statuses.push(res.status);
  }
  return statuses;
}

describe("X-Forwarded-For", () => {
  it("from a trusted proxy, each client address has its own budget", async () => {
    // Requests reach the test app from 127.0.0.1: that is the proxy here.
    const cp = await startControlPlane({ trustProxy: ["127.0.0.1"] });
    started.push(cp);
    startOfRateWindow(cp);
    const a = await register(cp, "203.0.113.7", 11);
    expect(a.slice(0, 10).every((s) => s === 201)).toBe(true);
    expect(a[10]).toBe(429);
    expect(await register(cp, "198.51.100.9", 1)).toEqual([201]);
  });

  it("without a trusted proxy, the header is ignored: one budget for the socket's address", async () => {
    const cp = await startControlPlane({ trustProxy: false });
    started.push(cp);
    startOfRateWindow(cp);
    const a = await register(cp, "203.0.113.7", 10);
    expect(a.every((s) => s === 201)).toBe(true);
    expect(await register(cp, "198.51.100.9", 1)).toEqual([429]);
  });
});
