// People for platform API tests: an account with a role, signed in over HTTP for real.
import { randomUUID } from "node:crypto";
import type { App } from "@berth/control-plane";
import { platformClient } from "./http.ts";

export const TEST_PASSWORD = "correct horse battery staple";

export type PersonRole = "portal_admin" | "org_owner" | "org_admin" | "project_admin" | "project_member" | "org_member" | "outsider";

export interface Person {
  userId: string;
  email: string;
  token: string;
  api: ReturnType<typeof platformClient>;
}

/**
 * A signed-in person holding `role` in the organisation (project roles in `projectId`).
 * org_member belongs to the organisation without any project role; outsider belongs nowhere.
 */
export async function addPerson(app: App, role: PersonRole, where: { organizationId: string; projectId?: string }): Promise<Person> {
  const email = `${role}-${randomUUID().slice(0, 8)}@example.test`;
  const user = await app.services.sessions.createUser({ email, name: role, password: TEST_PASSWORD, isPortalAdmin: role === "portal_admin" });
  const orgRoleStored = role === "org_owner" ? "owner" : role === "org_admin" ? "admin" : role === "outsider" || role === "portal_admin" ? null : "member";
  if (orgRoleStored) await app.services.memberships.addToOrganization(where.organizationId, user.id, orgRoleStored);
  if ((role === "project_admin" || role === "project_member") && where.projectId) {
    await app.services.memberships.addToProject(where.projectId, user.id, role === "project_admin" ? "admin" : "member");
  }
  const res = await app.inject({ method: "POST", url: "/api/v1/auth/login", payload: { email, password: TEST_PASSWORD } });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  const token = (JSON.parse(res.body) as { token: string }).token;
  return { userId: user.id, email, token, api: platformClient(app, token) };
}
