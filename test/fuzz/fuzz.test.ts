// The short fuzz pass CI runs: 2,000 seeded requests from both OpenAPI documents against a real
// control plane; any 5xx, response outside the documents or tenant-B data seen by A fails it.
// Then hostile backups (archives and dumps) through the upload routes and the real analysis:
// any 5xx or an analysis record past MAX_RECORD_BYTES fails it.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { fuzz, report, type FuzzResult } from "./engine.ts";
import { fuzzHostileUploads, MAX_RECORD_BYTES, reportHostile } from "./hostile-uploads.ts";
import { buildTenant } from "./tenants.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.close();
});

it("2,000 generated requests: no 5xx, no undocumented answer, no cross-tenant leak", { timeout: 120_000 }, async () => {
  const a = await buildTenant(cp, "A", 2);
  const b = await buildTenant(cp, "B", 1);
  const result: FuzzResult = await fuzz(cp, a, b, { requests: Number(process.env.FUZZ_REQUESTS ?? 2_000), seed: 20_261_125 });
  const lines: string[] = [];
  report(result, (l) => lines.push(l));
  const total = Object.values(result.stats).reduce((n, s) => n + s.requests, 0);
  expect(total).toBe(Number(process.env.FUZZ_REQUESTS ?? 2_000));
  expect(result.findings, lines.join("\n")).toEqual([]);
});

it("hostile backups through the upload routes: no 5xx, bounded analysis records", { timeout: 120_000 }, async () => {
  const a = await buildTenant(cp, "A", 1);
  const result = await fuzzHostileUploads(cp, a, { count: Number(process.env.FUZZ_HOSTILE ?? 40), seed: 20_261_207 });
  const lines: string[] = [];
  reportHostile(result, (l) => lines.push(l));
  expect(result.uploads).toBeGreaterThan(0);
  expect(result.findings, lines.join("\n")).toEqual([]);
  expect(result.largestRecordBytes).toBeLessThanOrEqual(MAX_RECORD_BYTES);
});
