// `npm run erp-images`: an administrator sets which image runs an ERP version; the next
// deploy command carries it.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

const run = promisify(execFile);
let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

const script = (...args: string[]) =>
  run("npm", ["run", "-s", "erp-images", "--", ...args], { cwd: path.resolve(import.meta.dirname, "../.."), env: { ...process.env, DATABASE_URL: cp.url }, timeout: 60_000 });

it("shows the defaults, sets an image per version, and refuses unsupported versions", async () => {
  const before = (await script()).stdout;
  expect(before).toContain("17.0\todoo:17.0");
  expect(before).toContain("postgres\tpostgres:16");
  const after = (await script("--set", "17.0=registry.example.com/odoo:17.0-custom", "--db", "postgres:17")).stdout;
  expect(after).toContain("17.0\tregistry.example.com/odoo:17.0-custom");
  expect(after).toContain("18.0\todoo:18.0");
  expect(after).toContain("postgres\tpostgres:17");
  expect(await cp.app.services.images.imageFor("17.0.1.3")).toEqual({ version: "17.0", image: "registry.example.com/odoo:17.0-custom", db: "postgres:17", db_major: 17, enterprise: false });
  await expect(script("--set", "12.0=odoo:12")).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("not supported") });
  await expect(script("--bogus")).rejects.toMatchObject({ code: 2 });
}, 120_000);
