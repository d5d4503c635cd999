// X-Request-Id: a generated id on every response (API errors, 404s, the dashboard's files) and
// in error bodies and log lines; a proxy's id believed only from a trusted proxy (BERTH_TRUST_PROXY).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { logLines } from "../support/log-lines.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const log = logLines();
let cp: TestControlPlane;
let trusting: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({ trustProxy: false, logger: { level: "info", stream: log.stream } });
  // app.inject's requests come from 127.0.0.1: that is the proxy here.
  trusting = await startControlPlane({ trustProxy: ["127.0.0.1"] });
});
afterAll(async () => {
  await cp?.close();
  await trusting?.close();
});

describe("X-Request-Id", () => {
  it("is generated for every response and given in the error body", async () => {
    const unauthenticated = await cp.app.inject({ url: "/api/public/v1/projects" });
    expect(unauthenticated.statusCode).toBe(401);
    const id = unauthenticated.headers["x-request-id"];
    expect(id).toMatch(UUID);
    expect(unauthenticated.json().request_id).toBe(id);

    const unknown = await cp.app.inject({ url: "/no/such/route" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers["x-request-id"]).toMatch(UUID);
    expect(unknown.json()).toMatchObject({ error: "route_not_found", request_id: unknown.headers["x-request-id"] });
    expect(unknown.headers["x-request-id"]).not.toBe(id);

    const page = await cp.app.inject({ url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["x-request-id"]).toMatch(UUID);
    const missingAsset = await cp.app.inject({ url: "/assets/nothing.js" });
    expect(missingAsset.json().request_id).toBe(missingAsset.headers["x-request-id"]);

    const badPath = await cp.app.inject({ url: "/api/public/v1/projects/%E0%A4%A" });
    expect(badPath.statusCode).toBe(400);
    expect(badPath.json().request_id).toBe(badPath.headers["x-request-id"]);
    expect(badPath.headers["x-request-id"]).toMatch(UUID);

    const healthy = await cp.app.inject({ url: "/healthz" });
    expect(healthy.headers["x-request-id"]).toMatch(UUID);
  });

  it("a proxy's id is honoured only from a trusted proxy, and only when sane", async () => {
    const fromProxy = { "x-request-id": "lb-7f3a.42/req:9" };
    const honoured = await trusting.app.inject({ url: "/api/public/v1/projects", headers: fromProxy });
    expect(honoured.headers["x-request-id"]).toBe("lb-7f3a.42/req:9");
    expect(honoured.json().request_id).toBe("lb-7f3a.42/req:9");

    const untrusted = await cp.app.inject({ url: "/api/public/v1/projects", headers: fromProxy });
    expect(untrusted.headers["x-request-id"]).toMatch(UUID);
    expect(untrusted.json().request_id).toBe(untrusted.headers["x-request-id"]);

    for (const insane of ["has space", "x".repeat(129), "tab\there", "naïve"]) {
      const res = await trusting.app.inject({ url: "/healthz", headers: { "x-request-id": insane } });
      expect(res.headers["x-request-id"]).toMatch(UUID);
    }
    const longest = "y".repeat(128);
    expect((await trusting.app.inject({ url: "/healthz", headers: { "x-request-id": longest } })).headers["x-request-id"]).toBe(longest);
  });

  it("is in the request's log lines", async () => {
    const res = await cp.app.inject({ url: "/healthz" });
    const id = res.headers["x-request-id"] as string;
    const mine = log.lines.map((l) => JSON.parse(l) as { reqId?: string; msg?: string }).filter((l) => l.reqId === id);
    expect(mine.map((l) => l.msg)).toEqual(expect.arrayContaining(["incoming request", "request completed"]));
  });

  it("the OpenAPI document's Error schema has request_id", async () => {
    const doc = (await cp.app.inject({ url: "/api/public/v1/openapi.json" })).json();
    expect(doc.components.schemas.Error.properties.request_id).toMatchObject({ type: "string" });
    expect(doc.components.schemas.Error.required).toContain("request_id");
  });
});
