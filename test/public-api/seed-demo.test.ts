// `npm run seed:demo -- --json` as a newcomer runs it: a child process against the
// control plane's database, printing one JSON object whose ids and keys work.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

const run = promisify(execFile);
let cp: TestControlPlane;
let dataDir: string;
beforeAll(async () => {
  cp = await startControlPlane();
  dataDir = await mkdtemp(path.join(os.tmpdir(), "berth-seed-"));
});
afterAll(async () => {
  await cp?.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface SeedOutput {
  base_url: string;
  organization_id: string;
  server_id: string;
  project_id: string;
  environments: { running: string; stopped: string };
  api_keys: { org_rw: string; org_ro: string; project_rw: string; project_ro: string };
  users: { owner: { email: string; password: string } };
}

async function seed(): Promise<SeedOutput> {
  const { stdout } = await run("npm", ["run", "-s", "seed:demo", "--", "--json"], {
    cwd: path.resolve(import.meta.dirname, "../.."),
    env: { ...process.env, DATABASE_URL: cp.url, BERTH_DATA_DIR: dataDir, BERTH_MASTER_KEY: Buffer.alloc(32, 7).toString("base64"), BERTH_PORT: "3999" },
    timeout: 60_000,
  });
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]!);
}

it("prints ids and four working keys, and makes a fresh organisation each run", async () => {
  const first = await seed();
  expect(first).toMatchObject({
    base_url: "http://127.0.0.1:3999",
    organization_id: expect.any(String),
    server_id: expect.any(String),
    project_id: expect.any(String),
    environments: { running: expect.any(String), stopped: expect.any(String) },
    api_keys: {
      org_rw: expect.stringMatching(/^svc_live_rw_/),
      org_ro: expect.stringMatching(/^svc_live_ro_/),
      project_rw: expect.stringMatching(/^svc_live_rw_/),
      project_ro: expect.stringMatching(/^svc_live_ro_/),
    },
  });
  const env = await publicClient(cp.app, first.api_keys.project_ro).get(`/environments/${first.environments.running}`);
  expect(env.body).toMatchObject({ status: "running", project_id: first.project_id });
  const stopped = await publicClient(cp.app, first.api_keys.org_ro).get(`/environments/${first.environments.stopped}`);
  expect(stopped.body.status).toBe("stopped");
  const restart = await publicClient(cp.app, first.api_keys.org_rw).post(`/environments/${first.environments.running}/restart`);
  expect(restart.status).toBe(202);
  const projects = await publicClient(cp.app, first.api_keys.project_ro).get("/projects");
  expect(projects.body.data.map((p: { id: string }) => p.id)).toEqual([first.project_id]);
  // The demo owner signs in to the platform API and owns the organisation.
  const login = await cp.app.inject({ method: "POST", url: "/api/v1/auth/login", payload: first.users.owner });
  expect(login.statusCode).toBe(200);
  const me = await cp.app.inject({ method: "GET", url: "/api/v1/me", headers: { authorization: `Bearer ${JSON.parse(login.body).token}` } });
  expect(JSON.parse(me.body).organizations).toEqual([expect.objectContaining({ id: first.organization_id, role: "org_owner" })]);

  const second = await seed();
  expect(second.organization_id).not.toBe(first.organization_id);
  const theirs = await publicClient(cp.app, second.api_keys.org_ro).get(`/projects/${first.project_id}`);
  expect(theirs.status).toBe(404);
}, 120_000);
