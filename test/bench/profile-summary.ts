// Summarises a .cpuprofile written with BENCH_CPU_PROF=1: self time per package (or per
// source folder of the repo) and the costliest functions, so two profiles can be compared
// without a browser. Usage: npx tsx test/bench/profile-summary.ts <file.cpuprofile> [top]
import { readFile } from "node:fs/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** node_modules/<pkg>, the repo's workspace folder, or V8's pseudo frames. */
function bucketOf(url: string, fn: string): string {
  if (!url) return fn.startsWith("(") ? fn : "(native / V8 builtins)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:")) return "node: core";
  const m = /\/(apps|packages|test)\/([^/]+)\/(?:src\/)?([^/]+)/.exec(url);
  if (m) return `${m[1]}/${m[2]}/${m[3]}`;
  return url;
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [top]");
const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const buckets = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, us] of selfUs) {
  const f = byId.get(id)!.callFrame;
  const bucket = bucketOf(f.url, f.functionName);
  buckets.set(bucket, (buckets.get(bucket) ?? 0) + us);
  const name = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/(apps|packages|test)\//, "$1/")}:${f.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + us);
}

// Inclusive: a sample counts for every package on its stack (once each), callees included.
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const f = byId.get(cur)!.callFrame;
    if (f.functionName === "(root)") continue;
    seen.add(bucketOf(f.url, f.functionName));
  }
  for (const b of seen) inclusive.set(b, (inclusive.get(b) ?? 0) + us);
}

const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const idle = buckets.get("(idle)") ?? 0;
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled, ${pct(total - idle)} on CPU\n\nself time by package / folder:\n`);
for (const [k, v] of [...buckets].sort((a, b) => b[1] - a[1]).slice(0, 30)) process.stdout.write(`  ${pct(v)}  ${k}\n`);
process.stdout.write(`\ntime with the package / folder anywhere on the stack (callees included):\n`);
for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 30)) process.stdout.write(`  ${pct(v)}  ${k}\n`);
process.stdout.write(`\ntop functions by self time:\n`);
for (const [k, v] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 30))) process.stdout.write(`  ${pct(v)}  ${k}\n`);
