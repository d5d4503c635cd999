// The platform routes the dashboard is built on (capacity, history, adding a server,
// projects, webhooks, environment actions), the server.status live event, and the
// dashboard's own assets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let owner: Person;
let admin: Person;
let projectAdmin: Person;
let member: Person;
let outsider: Person;
let otherProject: string;

beforeAll(async () => {
  cp = await startControlPlane();
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  const org = { organizationId: d.organization_id, projectId: null };
  otherProject = (await cp.app.services.projects.create(org, { name: "Secret project", server_id: d.server_id, erp_version: "17.0" })).id;
  await cp.app.services.environments.create(org, { project_id: otherProject, name: "hidden", cpu_cores: 2, ram_mb: 4096, disk_gb: 40 });
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
  projectAdmin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  const elsewhere = await createDemoOrganization(cp.database.db, cp.app.services);
  outsider = await addPerson(cp.app, "org_owner", { organizationId: elsewhere.organization_id });
  // The host as its agent reported it: 8 cores, 32 GB, 500 GB; and a live sample.
  await cp.database.pool.query("update servers set cpu_cores = 8, ram_mb = 32768, disk_gb = 500, enrolled_at = now() where id = $1", [d.server_id]);
  await cp.database.pool.query(
    `insert into server_stats (server_id, sampled_at, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb, load1, load5, load15, containers_running, containers_total)
     values ($1, now(), 12.5, 8192, 32768, 100, 500, 0.5, 0.4, 0.3, 4, 5)`,
    [d.server_id],
  );
}, 60_000);

afterAll(async () => cp?.close());

const events = async (type: string) =>
  (await cp.database.pool.query("select data from org_events where organization_id = $1 and type = $2 order by id", [d.organization_id, type])).rows.map(
    (r: { data: Record<string, unknown> }) => r.data,
  );

describe("GET /organizations/{org}/servers", () => {
  it("shows figures, environments, allocation and how many default environments still fit", async () => {
    const res = await owner.api.get(`/organizations/${d.organization_id}/servers`);
    expect(res.status).toBe(200);
    const s = res.body.data.find((x: { id: string }) => x.id === d.server_id);
    // Demo: production + staging (1 core, 2048 MB, 20 GB each), plus hidden (2, 4096, 40).
    expect(s).toMatchObject({
      status: "offline",
      stats: { cpu_percent: 12.5, ram_used_mb: 8192, containers_running: 4 },
      environment_count: 3,
      allocated: { cpu_cores: 4, ram_mb: 8192, disk_gb: 80 },
      capacity: { free_cpu_cores: 4, free_ram_mb: 24576, fits_default: 4, room: "room" },
    });
    expect(s.environments.map((e: { name: string }) => e.name).sort()).toEqual(["hidden", "production", "staging"]);
    expect(res.body.default_environment).toEqual({ cpu_cores: 1, ram_mb: 2048, disk_gb: 20 });
  });

  it("counts every environment for a project member but names only those of their projects", async () => {
    const res = await member.api.get(`/organizations/${d.organization_id}/servers`);
    expect(res.status).toBe(200);
    const s = res.body.data.find((x: { id: string }) => x.id === d.server_id);
    expect(s.environment_count).toBe(3);
    expect(s.environments.map((e: { name: string }) => e.name).sort()).toEqual(["production", "staging"]);
  });

  it("is a 404 for someone outside the organisation", async () => {
    expect((await outsider.api.get(`/organizations/${d.organization_id}/servers`)).status).toBe(404);
  });
});

describe("GET /organizations/{org}/servers/{id}/stats", () => {
  it("returns the samples of the window, oldest first", async () => {
    const insert = (minutesAgo: number, cpu: number) =>
      cp.database.pool.query(
        `insert into org_events (organization_id, type, data, created_at) values ($1, 'server.stats', jsonb_build_object('server_id', $2::text,
           'ts', to_char((now() - make_interval(mins => $3)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'cpu_percent', $4::float8,
           'ram_used_mb', 1000, 'ram_total_mb', 2000, 'disk_used_gb', 1, 'disk_total_gb', 10, 'load1', 0.1), now() - make_interval(mins => $3))`,
        [d.organization_id, d.server_id, minutesAgo, cpu],
      );
    await insert(90, 1);
    await insert(30, 2);
    await insert(5, 3);
    const res = await member.api.get(`/organizations/${d.organization_id}/servers/${d.server_id}/stats?minutes=60`);
    expect(res.status).toBe(200);
    expect(res.body.points.map((p: { cpu_percent: number }) => p.cpu_percent)).toEqual([2, 3]);
    expect(res.body.points[0]).toMatchObject({ ram_used_mb: 1000, ram_total_mb: 2000, disk_total_gb: 10 });
    const wider = await member.api.get(`/organizations/${d.organization_id}/servers/${d.server_id}/stats?minutes=120`);
    expect(wider.body.points).toHaveLength(3);
    expect((await outsider.api.get(`/organizations/${d.organization_id}/servers/${d.server_id}/stats`)).status).toBe(404);
    expect((await member.api.get(`/organizations/${d.organization_id}/servers/${otherProject}/stats`)).status).toBe(404);
    expect((await member.api.get(`/organizations/${d.organization_id}/servers/${d.server_id}/stats?minutes=9999`)).status).toBe(400);
  });
});

describe("POST /organizations/{org}/servers", () => {
  it("creates a server with a one-time token and the install command for this origin", async () => {
    const res = await admin.api.post(`/organizations/${d.organization_id}/servers`, { name: "web-9" }, { host: "berth.example.com", "x-forwarded-proto": "https" });
    expect(res.status).toBe(201);
    expect(res.body.server).toMatchObject({ name: "web-9", status: "pending" });
    const key = await cp.app.services.signer.releaseKey();
    expect(res.body.install_command).toBe(`curl -fsSL https://berth.example.com/install.sh | sudo sh -s -- --key ${key} --token ${res.body.enrollment.token}`);
    expect(res.body.enrollment.token).toMatch(/^berth_enr_/);
    // Everyone watching the organisation hears of it.
    expect(await events("server.status")).toContainEqual(expect.objectContaining({ server_id: res.body.server.id, status: "pending", previous_status: null }));
  });

  it("is refused without org.servers.manage", async () => {
    const res = await projectAdmin.api.post(`/organizations/${d.organization_id}/servers`, { name: "nope" });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe("You don't have permission to manage servers.");
  });
});

describe("server.status live event", () => {
  it("is written when the status changes, not when only last_seen_at moves", async () => {
    const before = (await events("server.status")).length;
    await cp.database.pool.query("update servers set last_seen_at = now() where id = $1", [d.server_id]);
    expect(await events("server.status")).toHaveLength(before);
    await cp.database.pool.query("update servers set status = 'online' where id = $1", [d.server_id]);
    const after = await events("server.status");
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)).toMatchObject({ server_id: d.server_id, status: "online", previous_status: expect.any(String) });
    expect(after.at(-1)!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe("GET /organizations/{org}/projects", () => {
  it("gives each project the caller's role and permission codes", async () => {
    const mine = await member.api.get(`/organizations/${d.organization_id}/projects`);
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((p: { id: string }) => p.id)).toEqual([d.project_id]);
    const p = mine.body.data[0];
    expect(p.role).toBe("project_member");
    expect(p.permissions).toContain("project.deployments.view");
    expect(p.permissions).not.toContain("project.environments.deploy");
    expect(p.environments.map((e: { name: string }) => e.name).sort()).toEqual(["production", "staging"]);

    const all = await owner.api.get(`/organizations/${d.organization_id}/projects`);
    expect(all.body.data.map((x: { id: string }) => x.id).sort()).toEqual([d.project_id, otherProject].sort());
    expect(all.body.data[0].permissions).toContain("project.environments.deploy");
  });
});

describe("webhook subscriptions", () => {
  it("are created with a secret shown once, listed and deleted", async () => {
    const base = `/organizations/${d.organization_id}/webhooks`;
    const created = await admin.api.post(base, { url: "https://hooks.example.com/berth", events: ["deployment.completed"] });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    const list = await admin.api.get(base);
    expect(list.body.data).toContainEqual(expect.objectContaining({ id: created.body.id, url: "https://hooks.example.com/berth" }));
    expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
    expect((await admin.api.delete(`${base}/${created.body.id}`)).status).toBe(204);
    expect((await admin.api.get(base)).body.data).toEqual([]);
    expect((await admin.api.post(base, { url: "ftp://x", events: ["deployment.completed"] })).status).toBe(400);
    expect((await projectAdmin.api.get(base)).status).toBe(403);
  });
});

describe("POST /environments/{id}/actions/{action}", () => {
  it("queues restart for a project admin and checks the environment's state", async () => {
    const res = await projectAdmin.api.post(`/environments/${d.environments.running}/actions/restart`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ environment_id: d.environments.running, kind: "restart" });
    expect((await projectAdmin.api.post(`/environments/${d.environments.stopped}/actions/stop`)).status).toBe(409);
  });

  it("is a 403 for a project member, a 404 outside and for an unknown action", async () => {
    const denied = await member.api.post(`/environments/${d.environments.stopped}/actions/start`);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe("You don't have permission to restart, stop or start environments.");
    expect((await outsider.api.post(`/environments/${d.environments.stopped}/actions/start`)).status).toBe(404);
    expect((await owner.api.post(`/environments/${d.environments.stopped}/actions/destroy`)).status).toBe(400);
  });
});

describe("the dashboard's page and assets", () => {
  it("serves the page, its modules and uPlot, with no CDN", async () => {
    const page = await cp.app.inject({ url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(page.body).not.toMatch(/https?:\/\//);
    const app = await cp.app.inject({ url: "/assets/app.js" });
    expect(app.headers["content-type"]).toContain("text/javascript");
    const again = await cp.app.inject({ url: "/assets/app.js", headers: { "if-none-match": String(app.headers.etag) } });
    expect(again.statusCode).toBe(304);
    expect((await cp.app.inject({ url: "/assets/uPlot.iife.min.js" })).statusCode).toBe(200);
    expect((await cp.app.inject({ url: "/assets/uPlot.min.css" })).headers["content-type"]).toContain("text/css");
    expect((await cp.app.inject({ url: "/assets/../dashboard.routes.ts" })).statusCode).toBe(404);
    const spec = JSON.parse((await cp.app.inject({ url: "/api/v1/openapi.json" })).body) as { paths: Record<string, unknown> };
    expect(Object.keys(spec.paths)).toContain("/organizations/{organization_id}/servers");
    expect(Object.keys(spec.paths).filter((p) => p.startsWith("/assets") || p === "/")).toEqual([]);
  });
});
