// Rate limits, public spec section 8: per key, fixed 60 s windows, counters in PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient, type Res } from "../support/http.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
  // Start each test at the beginning of a window so one test's requests share one window.
  const now = cp.clock.now().getTime();
  cp.clock.advance(60_000 - (now % 60_000) + 100);
});
afterAll(async () => cp?.close());

const demo = () => createDemoOrganization(cp.database.db, cp.app.services);
const nextWindow = () => {
  const now = cp.clock.now().getTime();
  cp.clock.advance(60_000 - (now % 60_000) + 100);
};

function expectHeaders(res: Res, limit: number, remaining: number) {
  expect(res.headers["x-ratelimit-limit"]).toBe(String(limit));
  expect(res.headers["x-ratelimit-remaining"]).toBe(String(remaining));
  expect(res.headers["x-ratelimit-window"]).toBe("60");
}

describe.each([
  ["read-only", "org_ro", 120],
  ["full-access", "org_rw", 20],
] as const)("%s key", (_name, keyName, limit) => {
  it(`allows ${limit} requests per window, counts down, then answers 429 with Retry-After`, async () => {
    nextWindow();
    const d = await demo();
    const api = publicClient(cp.app, d.api_keys[keyName]);
    for (let i = 1; i <= limit; i++) {
      const res = await api.get("/servers");
      expect(res.status).toBe(200);
      expectHeaders(res, limit, limit - i);
    }
    const over = await api.get("/servers");
    expect(over.status).toBe(429);
    expectHeaders(over, limit, 0);
    const retry = Number(over.headers["retry-after"]);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(over.body).toEqual({ error: "rate_limit_exceeded", message: expect.any(String), retry_after: retry, request_id: over.headers["x-request-id"] });

    // Another key of the same organisation has its own budget.
    const other = await publicClient(cp.app, d.api_keys.project_ro).get("/servers");
    expect(other.status).toBe(200);

    nextWindow();
    const later = await api.get("/servers");
    expect(later.status).toBe(200);
    expectHeaders(later, limit, limit - 1);
  });
});

describe("webhook writes", () => {
  it("are limited to 10 per window on top of the key's 20", async () => {
    nextWindow();
    const d = await demo();
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const body = { url: "https://hooks.example.com/berth", events: ["deploy.completed"] };
    for (let i = 1; i <= 10; i++) {
      const res = await api.post("/webhooks", body);
      expect(res.status).toBe(201);
      expectHeaders(res, 10, 10 - i);
    }
    const over = await api.post("/webhooks", body);
    expect(over.status).toBe(429);
    expectHeaders(over, 10, 0);
    expect(over.body.error).toBe("rate_limit_exceeded");
    // Other requests of the key still pass: 11 used of 20, then they run out at 20 in total.
    const read = await api.get("/webhooks");
    expect(read.status).toBe(200);
    expectHeaders(read, 20, 8);
    for (let i = 0; i < 8; i++) expect((await api.get("/webhooks")).status).toBe(200);
    expect((await api.get("/webhooks")).status).toBe(429);
  });
});

describe("every replica counts the same", () => {
  it("requests spread over two control planes share one budget", async () => {
    nextWindow();
    const d = await demo();
    const second = await startControlPlane({ url: cp.url });
    try {
      second.clock.advance(cp.clock.now().getTime() - second.clock.now().getTime());
      const a = publicClient(cp.app, d.api_keys.org_rw);
      const b = publicClient(second.app, d.api_keys.org_rw);
      for (let i = 0; i < 10; i++) {
        expect((await a.get("/projects")).status).toBe(200);
        expect((await b.get("/projects")).status).toBe(200);
      }
      const over = await b.get("/projects");
      expect(over.status).toBe(429);
      expect((await a.get("/projects")).status).toBe(429);
    } finally {
      await second.app.close();
      await second.database.close();
    }
  });
});

describe("requests that are not authenticated", () => {
  it("are refused before anything is counted", async () => {
    nextWindow();
    const d = await demo();
    for (let i = 0; i < 25; i++) expect((await publicClient(cp.app, "svc_live_rw_" + "x".repeat(32)).get("/projects")).status).toBe(401);
    const res = await publicClient(cp.app, d.api_keys.org_rw).get("/projects");
    expectHeaders(res, 20, 19);
  });
});
