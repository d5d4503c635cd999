// Error bodies for every class of bad input, and the generated OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
beforeAll(async () => {
  cp = await startControlPlane();
  d = await createDemoOrganization(cp.database.db, cp.app.services);
});
afterAll(async () => cp?.close());

describe("error bodies", () => {
  it.each([
    [{}, 401, "authentication_required"],
    [{ authorization: "Basic abc" }, 401, "invalid_authorization_header"],
    [{ authorization: "Bearer" }, 401, "invalid_authorization_header"],
    [{ authorization: "Bearer sk_test_123" }, 401, "invalid_api_key"],
    [{ authorization: `Bearer svc_live_rw_${"A".repeat(32)}` }, 401, "invalid_api_key"],
  ])("headers %o give %i %s with WWW-Authenticate", async (headers, status, code) => {
    const res = await cp.app.inject({ url: "/api/public/v1/projects", headers });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({ error: code, message: expect.any(String), request_id: res.headers["x-request-id"] });
    expect(res.headers["www-authenticate"]).toContain("Bearer");
  });

  it("malformed JSON is a 400 invalid_json and changes nothing", async () => {
    const res = await cp.app.inject({
      method: "POST",
      url: "/api/public/v1/projects",
      headers: { authorization: `Bearer ${d.api_keys.org_rw}`, "content-type": "application/json" },
      payload: '{"name": "x",',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe("invalid_json");
  });

  it("an unknown route is a 404 route_not_found", async () => {
    const res = await publicClient(cp.app, d.api_keys.org_ro).get("/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("route_not_found");
  });

  it("an unsupported content type is a 415", async () => {
    const res = await cp.app.inject({
      method: "POST",
      url: "/api/public/v1/projects",
      headers: { authorization: `Bearer ${d.api_keys.org_rw}`, "content-type": "text/plain" },
      payload: "name=x",
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().error).toBe("unsupported_media_type");
  });

  it("validation errors list every problem with its path", async () => {
    const res = await publicClient(cp.app, d.api_keys.org_rw).post("/environments", { project_id: "nope", name: "", cpu_cores: 0 });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_error");
    expect(res.body.details.length).toBeGreaterThanOrEqual(1);
    for (const detail of res.body.details) expect(detail).toEqual({ path: expect.stringMatching(/^body/), message: expect.any(String) });
  });
});

describe("OpenAPI document and explorers", () => {
  const expected: [string, string][] = [
    ["get", "/projects"],
    ["post", "/projects"],
    ["get", "/projects/{id}"],
    ["patch", "/projects/{id}"],
    ["delete", "/projects/{id}"],
    ["get", "/projects/{id}/environments"],
    ["get", "/servers"],
    ["get", "/servers/{id}"],
    ["post", "/environments"],
    ["get", "/environments/{id}"],
    ["get", "/environments/{id}/deployments"],
    ["get", "/deployments/{id}"],
    ["post", "/webhooks"],
    ["get", "/webhooks"],
    ["get", "/webhooks/{id}"],
    ["patch", "/webhooks/{id}"],
    ["delete", "/webhooks/{id}"],
    ["get", "/api-keys"],
    ["get", "/api-keys/{id}"],
    ["delete", "/api-keys/{id}"],
    ...["deploy", "restart", "start", "stop"].map((a) => ["post", `/environments/{id}/${a}`] as [string, string]),
    ...["deploy", "redeploy", "restart", "start", "stop"].map((a) => ["post", `/environments/{id}/actions/${a}`] as [string, string]),
  ];

  it("is OpenAPI 3.1 and documents every public route with success and error responses", async () => {
    const res = await cp.app.inject({ url: "/api/public/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.servers).toEqual([{ url: "/api/public/v1" }]);
    for (const [method, path] of expected) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method.toUpperCase()} ${path}`).toBeDefined();
      const statuses = Object.keys(op.responses);
      expect(statuses.some((s) => s.startsWith("2")), `${method} ${path} success`).toBe(true);
      expect(statuses).toEqual(expect.arrayContaining(["400", "401", "403", "429"]));
    }
    expect(doc.components.schemas.Error).toBeDefined();
    // Each error status names the codes it carries, so a client can switch on them.
    expect(doc.paths["/deployments/{id}"].get.responses["404"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error404" });
    expect(doc.components.schemas.Error404.properties.error.enum).toContain("not_found");
    expect(doc.components.schemas.Error404.properties.error.enum).not.toContain("task_in_progress");
    expect(doc.components.schemas.Error429.properties.error.enum).toContain("rate_limit_exceeded");
    expect(doc.components.schemas.Task.properties.status.enum).toEqual(["pending", "queued", "running", "completed", "failed", "cancelled"]);
    expect(doc.components.securitySchemes.apiKey.scheme).toBe("bearer");
  });

  it("serves Swagger UI and Redoc from the control plane itself, no CDN", async () => {
    const swagger = await cp.app.inject({ url: "/api/public/v1/docs/" });
    expect(swagger.statusCode).toBe(200);
    const redoc = await cp.app.inject({ url: "/api/public/v1/redoc" });
    expect(redoc.statusCode).toBe(200);
    for (const page of [swagger.body, redoc.body]) {
      const srcs = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      for (const src of srcs) expect(src.startsWith("http"), src).toBe(false);
    }
    const bundle = await cp.app.inject({ url: "/api/public/v1/redoc/redoc.standalone.js" });
    expect(bundle.statusCode).toBe(200);
    expect(bundle.body.length).toBeGreaterThan(100_000);
  });
});
