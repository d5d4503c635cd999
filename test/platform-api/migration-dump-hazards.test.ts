// A backup whose dump would run something on the customer's server, over real HTTP with the
// real streaming analysis (issue 32, finding 1): the analysis lists what it found
// (dump_hazards, with the line and the kind) and start refuses it with 409 dump_unsafe, naming
// the first one, while nothing is made; a clean dump of the same ERP starts. A custom-format
// dump (pg_dump -Fc, as dump.dump in the zip) is read the same way: what pg_restore would run
// of each TOC entry.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import { erpCustomDump } from "../../packages/protocol/src/pg-custom-archive.test-helpers.ts";
import { erpDump, zipBytes } from "../fuzz/archives.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationRecordingCommands } from "../support/demo-agent.ts";
import { addPerson, type Person } from "../support/people.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let origin: string;
let d: DemoOrganization;
let owner: Person;
let stop: () => void;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 } });
  origin = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  ({ d, stop } = await demoOrganizationRecordingCommands(cp, origin));
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
}, 60_000);

afterAll(async () => {
  stop?.();
  await cp?.close();
});

/** A migration of `dump` (zipped as the database manager does, as `member`), analysed and configured for the demo server. */
async function readyMigration(dump: Buffer, member = "dump.sql"): Promise<string> {
  const id = (await owner.api.post("/migrations", { organization_id: d.organization_id, source_type: "on_premise", project_name: `Acme ${randomBytes(3).toString("hex")}`, data_processing_consent: true })).body.id as string;
  const backup = zipBytes([{ name: member, data: dump, method: 8 }]);
  expect((await owner.api.post(`/migrations/${id}/upload/init?file_name=acme.zip&file_size=${backup.length}`)).status).toBe(200);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(backup)]), "acme.zip");
  expect((await fetch(`${origin}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form })).status).toBe(200);
  await waitUntil("the analysis", async () => (await owner.api.get(`/migrations/${id}`)).body.status === "analyzed", { timeoutMs: 30_000, intervalMs: 100 });
  expect((await owner.api.post(`/migrations/${id}/configure`, { target_vm_id: d.server_id })).body.status).toBe("ready");
  return id;
}

it("a dump that runs a program on the database server is listed by the analysis and refused at start (409 dump_unsafe); nothing is made", async () => {
  // Hidden from a line-based reader: the COPY ... TO PROGRAM follows a statement on its line.
  const id = await readyMigration(erpDump("SELECT 1; COPY (SELECT 1) TO PROGRAM 'touch /tmp/berth-pwned';"));
  const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
  expect(analysis.dump_hazard_count).toBe(1);
  expect(analysis.dump_hazards).toEqual([expect.objectContaining({ line: 9, text: expect.stringContaining("TO PROGRAM") })]);

  const refused = await owner.api.post(`/migrations/${id}/start`);
  expect(refused).toMatchObject({ status: 409, body: { error: "dump_unsafe", message: expect.stringContaining("line 9") } });
  expect((await owner.api.get(`/migrations/${id}`)).body).toMatchObject({ status: "ready", project_id: null, environment_id: null });
}, 60_000);

it("psql meta-commands anywhere on a line are listed too, and so refused", async () => {
  const id = await readyMigration(erpDump("SELECT 'a'';\\! no'; \\! touch /tmp/berth-pwned"));
  const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
  expect(analysis.dump_hazards).toEqual([expect.objectContaining({ line: 9, text: expect.stringContaining("\\!") })]);
  expect((await owner.api.post(`/migrations/${id}/start`)).body.error).toBe("dump_unsafe");
}, 60_000);

it("the same ERP's clean dump has no hazard and starts", async () => {
  const id = await readyMigration(erpDump());
  const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
  expect(analysis.dump_hazard_count ?? 0).toBe(0);
  expect(await owner.api.post(`/migrations/${id}/start`)).toMatchObject({ status: 202, body: { status: "processing" } });
}, 60_000);

it("a custom-format dump with a function in an untrusted language is listed by the analysis and refused at start (409 dump_unsafe)", async () => {
  const pwn = "CREATE FUNCTION public.pwn() RETURNS integer\n    LANGUAGE plpython3u\n    AS $$import os; os.system('touch /tmp/berth-pwned')$$;\n";
  const id = await readyMigration(erpCustomDump([{ dumpId: 40, desc: "FUNCTION", tag: "pwn()", namespace: "public", defn: pwn }]), "dump.dump");
  const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
  expect(analysis.dump_hazard_count).toBe(1);
  expect(analysis.dump_hazards).toEqual([{ line: 2, kind: "untrusted_language", text: expect.stringMatching(/^FUNCTION pwn\(\) \(TOC entry 40\): .*plpython3u/) }]);

  const refused = await owner.api.post(`/migrations/${id}/start`);
  expect(refused).toMatchObject({ status: 409, body: { error: "dump_unsafe", message: expect.stringContaining("TOC entry 40") } });
  expect((await owner.api.get(`/migrations/${id}`)).body).toMatchObject({ status: "ready", project_id: null, environment_id: null });
}, 60_000);

it("the same ERP's clean custom-format dump has no hazard and starts", async () => {
  const id = await readyMigration(erpCustomDump(), "dump.dump");
  const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
  expect(analysis).toMatchObject({ erp_version: "17.0", dump_hazard_count: 0, dump_hazards: [] });
  expect(await owner.api.post(`/migrations/${id}/start`)).toMatchObject({ status: 202, body: { status: "processing" } });
}, 60_000);
