// `npm run fuzz`: FUZZ_REQUESTS (100000) requests, generated from both OpenAPI documents, against
// a real control plane (app.inject) on a real PostgreSQL (embedded, or a fresh database on
// DATABASE_URL's server). FUZZ_SEED (1) makes a run repeatable, FUZZ_CONCURRENCY (16) sets the
// requests in flight; FUZZ_HOSTILE (200) hostile backups follow through the upload routes and the
// real analysis. Prints a table, the findings, and a last JSON line; exits 1 on a finding.
import { fuzz, report } from "./engine.ts";
import { startFuzzControlPlane } from "./start.ts";
import { fuzzHostileUploads, reportHostile } from "./hostile-uploads.ts";
import { buildTenant } from "./tenants.ts";

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const requests = num("FUZZ_REQUESTS", 100_000);
const seed = num("FUZZ_SEED", 1);
const log = (line: string) => process.stdout.write(`${line}\n`);

const cp = await startFuzzControlPlane();
let failed = false;
try {
  const a = await buildTenant(cp, "A", 4);
  const b = await buildTenant(cp, "B", 1);
  log(`fuzzing ${requests} requests (seed ${seed}) through app.inject as tenant A, with tenant B's ids…`);
  let lastShown = 0;
  const result = await fuzz(cp, a, b, {
    requests,
    seed,
    concurrency: num("FUZZ_CONCURRENCY", 16),
    onProgress: (sent) => {
      if (sent - lastShown >= 10_000) {
        lastShown = sent;
        process.stderr.write(`  ${sent} sent\n`);
      }
    },
  });
  report(result, log);
  // Then hostile backups through the upload routes (FUZZ_HOSTILE of them, 200 by default).
  const hostile = await fuzzHostileUploads(cp, a, { count: num("FUZZ_HOSTILE", 200), seed });
  reportHostile(hostile, log);
  failed = result.findings.length > 0 || hostile.findings.length > 0;
} finally {
  await cp.close();
}
process.exit(failed ? 1 : 0);
