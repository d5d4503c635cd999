// The platform API's OpenAPI document is generated from the route schemas and covers
// every endpoint of platform spec 4.1 and the session routes.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

it("documents every platform endpoint with a session security scheme, without the public API's paths", async () => {
  const res = await cp.app.inject({ method: "GET", url: "/api/v1/openapi.json" });
  expect(res.statusCode).toBe(200);
  const doc = JSON.parse(res.body);
  expect(doc.info.title).toBe("Berth platform API");
  expect(doc.servers).toEqual([{ url: "/api/v1" }]);
  expect(doc.components.securitySchemes.session).toMatchObject({ type: "http", scheme: "bearer" });
  const ops = Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>).flatMap(([path, methods]) =>
    Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
  );
  for (const op of [
    "POST /deployments",
    "GET /deployments",
    "GET /deployments/{deployment_id}",
    "GET /deployments/{deployment_id}/logs",
    "GET /deployments/{deployment_id}/progress",
    "POST /deployments/{deployment_id}/retry",
    "POST /deployments/{deployment_id}/rollback",
    "POST /deployments/{deployment_id}/cancel",
    "DELETE /deployments/environment/{environment_id}/destroy",
    "POST /environments/{environment_id}/deploy",
    "POST /projects/{project_id}/environments/{env_id}/deploy",
    "PATCH /projects/{project_id}/environments/{env_id}",
    "GET /environments/{env_id}/backups",
    "POST /environments/{env_id}/backups",
    "POST /environments/{env_id}/restore",
    "POST /auth/login",
    "GET /me",
  ]) {
    expect(ops).toContain(op);
  }
  expect(ops.some((op) => op.includes("/api/public"))).toBe(false);
  // Every operation declares its success and error responses.
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)) {
    for (const [method, op] of Object.entries(methods)) {
      expect(Object.keys(op.responses).some((s) => s.startsWith("2")), `${method} ${path}`).toBe(true);
    }
  }
  const record = doc.components.schemas.DeploymentRecord;
  expect(Object.keys(record.properties)).toEqual(expect.arrayContaining(["id", "version", "status", "trigger", "triggered_by", "rollback_from_id", "extra_data", "duration_seconds", "error_message"]));
});
