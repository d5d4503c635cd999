// Runs one analysis of a stored backup in a process of its own, so its peak RSS growth is
// the analysis's alone: prints one JSON line {ms, rss_growth_mb, analysis}.
import { analyzeBackup } from "../../../apps/control-plane/src/modules/migrations/analysis/analyze.ts";
import { createObjectStore } from "../../../apps/control-plane/src/lib/object-store/index.ts";
import type { Readable } from "node:stream";

const [dir, key, size] = process.argv.slice(2) as [string, string, string];
const store = createObjectStore({ kind: "local", dir });
const source = {
  size: Number(size),
  open: async (range?: { start: number; end: number }) => (await store.get(key, range ? { range } : {})) as Readable,
};
let peak = process.memoryUsage().rss;
const baseline = peak;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
const t0 = performance.now();
const analysis = await analyzeBackup(source);
const ms = performance.now() - t0;
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss, process.resourceUsage().maxRSS * 1024);
process.stdout.write(`${JSON.stringify({ ms, rss_growth_mb: (peak - baseline) / 2 ** 20, analysis })}\n`);
