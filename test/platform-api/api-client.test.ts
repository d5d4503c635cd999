// The typed client (@berth/protocol/api-client) against a real control plane over real HTTP:
// both APIs, their answers typed from the documents, failures as one BerthApiError.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { BerthApiError, ok, platformClient, publicClient } from "@berth/protocol/api-client";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, TEST_PASSWORD, type Person } from "../support/people.ts";

let cp: TestControlPlane;
let url: string;
let d: DemoOrganization;
let owner: Person;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  const address = cp.app.server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
});
afterAll(async () => cp?.close());

it("signs in, lists and creates through the platform API with typed paths and bodies", async () => {
  const anonymous = platformClient({ url });
  const { token } = await ok(anonymous.POST("/auth/login", { body: { email: owner.email, password: TEST_PASSWORD } }));
  const api = platformClient({ url, token: () => token });

  const projects = await ok(api.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id: d.organization_id } } }));
  expect(projects.data.map((p) => p.id)).toContain(d.project_id);

  const created = await ok(api.POST("/organizations/{organization_id}/projects", { params: { path: { organization_id: d.organization_id } }, body: { name: "Typed", server_id: d.server_id } }));
  expect(created).toMatchObject({ name: "Typed", server_id: d.server_id });
  const renamed = await ok(api.PATCH("/projects/{project_id}", { params: { path: { project_id: created.id } }, body: { name: "Typed (renamed)" } }));
  expect(renamed.name).toBe("Typed (renamed)");
});

it("turns a refusal into a BerthApiError with the API's code, message, request id and details", async () => {
  const api = platformClient({ url, token: owner.token });
  const missing = await ok(api.PATCH("/projects/{project_id}", { params: { path: { project_id: crypto.randomUUID() } }, body: { name: "x" } })).catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(BerthApiError);
  expect(missing).toMatchObject({ status: 404, code: "not_found", requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

  const invalid = await ok(api.POST("/organizations/{organization_id}/projects", { params: { path: { organization_id: d.organization_id } }, body: { name: "", server_id: d.server_id } })).catch((e: unknown) => e);
  expect(invalid).toMatchObject({ status: 400, code: "validation_error" });
  expect((invalid as BerthApiError).details?.[0]?.path).toBe("body/name");

  const signedOut = await ok(platformClient({ url }).GET("/me")).catch((e: unknown) => e);
  expect(signedOut).toMatchObject({ status: 401, code: "authentication_required" });
});

it("reads the public API with an API key", async () => {
  const key = await ok(
    platformClient({ url, token: owner.token }).POST("/organizations/{organization_id}/api-keys", { params: { path: { organization_id: d.organization_id } }, body: { name: "client test", access: "read_only" } }),
  );
  const api = publicClient({ url, token: key.key });
  const page = await ok(api.GET("/projects"));
  expect(page.data.map((p) => p.id)).toContain(d.project_id);
  await expect(ok(publicClient({ url, token: "svc_live_ro_nope" }).GET("/projects"))).rejects.toMatchObject({ status: 401 });
});
