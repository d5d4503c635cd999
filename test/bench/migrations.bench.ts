// `npm run bench:migrations` (analysis part): how fast the streaming analysis reads a large
// ERP backup and how much memory it takes, against a plain read of the same file in the
// same run: `unzip -p <file> dump.sql | wc -c` (inflate the dump, count its bytes).
//   backup     a generated zip of BENCH_BACKUP_MB (2048) MB made as the vendor's database
//              manager makes one (generate-backup.ts), placed in a local backup store
//   analysis   analyzeBackup over the store's ranged reads, in a child process of its own
//              (analysis-child.ts), whose peak RSS growth is measured
// Runs alternate their order (BENCH_ANALYSIS_RUNS, 3; the median is reported). Throughput is
// the dump's uncompressed bytes per second for both. Goals: analysis >= 70 % of the plain
// read's throughput; RSS growth <= 64 MB. The last line is one JSON object, units in its keys.
import { execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generateBackup } from "./migrations/generate-backup.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const MB = Math.round(setting("BENCH_BACKUP_MB", 2048, 1));
const RUNS = Math.round(setting("BENCH_ANALYSIS_RUNS", 3, 1));
const GOAL_RATIO = 0.7;
const GOAL_RSS_MB = 64;
const log = (line = "") => process.stdout.write(`${line}\n`);
const here = path.dirname(fileURLToPath(import.meta.url));

function plainRead(file: string): { ms: number; bytes: number } {
  const t0 = performance.now();
  const out = execFileSync("sh", ["-c", 'unzip -p "$1" dump.sql | wc -c', "sh", file]).toString().trim();
  return { ms: performance.now() - t0, bytes: Number(out) };
}

interface ChildResult {
  ms: number;
  rss_growth_mb: number;
  analysis: { database_size_bytes: number; user_count: number; partner_count: number; total_modules: number; erp_version: string };
}

function analyseInChild(dir: string, key: string, size: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, path.join(here, "migrations", "analysis-child.ts"), dir, key, String(size)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1)!) as ChildResult) : reject(new Error(`analysis child exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const work = await mkdtemp(path.join(os.tmpdir(), "berth-bench-migrations-"));
  try {
    const key = "migrations/bench/backup.zip";
    const file = path.join(work, ...key.split("/"));
    await mkdir(path.dirname(file), { recursive: true });
    log(`bench:migrations (analysis): generating a ~${MB} MB zip backup ...`);
    const t0 = performance.now();
    const made = await generateBackup(file, MB);
    const size = (await stat(file)).size;
    log(`  ${(size / 1e6).toFixed(0)} MB zip, dump.sql ${(made.dumpBytes / 1e6).toFixed(0)} MB, file store ${(made.filestoreBytes / 1e6).toFixed(0)} MB, made in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    execFileSync("sh", ["-c", 'cat "$1" > /dev/null', "sh", file]); // both read from the page cache

    const plain: number[] = [];
    const analysis: number[] = [];
    const rss: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const order = run % 2 ? ["plain", "analysis"] : ["analysis", "plain"];
      for (const kind of order) {
        if (kind === "plain") {
          const r = plainRead(file);
          if (r.bytes !== made.dumpBytes) throw new Error(`unzip read ${r.bytes} bytes, the dump has ${made.dumpBytes}`);
          plain.push(r.ms);
        } else {
          const r = await analyseInChild(work, key, size);
          const a = r.analysis;
          if (a.database_size_bytes !== made.dumpBytes || a.user_count !== made.internalUsers || a.partner_count !== made.partners || a.total_modules !== made.modules || a.erp_version !== "17.0") {
            throw new Error(`the analysis found other facts than the backup was made with: ${JSON.stringify(a)}`);
          }
          analysis.push(r.ms);
          rss.push(r.rss_growth_mb);
        }
      }
      const rate = (ms: number) => (made.dumpBytes / 1e6 / (ms / 1000)).toFixed(0);
      log(`  run ${run}: analysis ${rate(analysis.at(-1)!)} MB/s (RSS +${rss.at(-1)!.toFixed(1)} MB), unzip -p | wc -c ${rate(plain.at(-1)!)} MB/s`);
    }
    const rate = (ms: number) => made.dumpBytes / 1e6 / (ms / 1000);
    const analysisMbS = rate(median(analysis));
    const plainMbS = rate(median(plain));
    const ratio = analysisMbS / plainMbS;
    const rssMb = Math.max(...rss);
    log("");
    log("                      dump MB/s   file MB/s   peak RSS growth");
    log(`  analysis            ${analysisMbS.toFixed(0).padStart(9)}   ${(size / 1e6 / (median(analysis) / 1000)).toFixed(0).padStart(9)}   ${rssMb.toFixed(1)} MB`);
    log(`  unzip -p | wc -c    ${plainMbS.toFixed(0).padStart(9)}   ${(size / 1e6 / (median(plain) / 1000)).toFixed(0).padStart(9)}`);
    log(`analysis = ${(ratio * 100).toFixed(0)} % of the plain read (goal >= ${GOAL_RATIO * 100} %: ${ratio >= GOAL_RATIO ? "met" : "NOT met"}); RSS growth ${rssMb.toFixed(1)} MB (goal <= ${GOAL_RSS_MB} MB: ${rssMb <= GOAL_RSS_MB ? "met" : "NOT met"})`);
    log(
      JSON.stringify({
        backup_mb: +(size / 1e6).toFixed(1),
        dump_mb: +(made.dumpBytes / 1e6).toFixed(1),
        runs: RUNS,
        analysis_mb_s: +analysisMbS.toFixed(1),
        unzip_wc_mb_s: +plainMbS.toFixed(1),
        analysis_over_unzip: +ratio.toFixed(3),
        peak_rss_growth_mb: +rssMb.toFixed(1),
        goal_ratio: GOAL_RATIO,
        goal_rss_growth_mb: GOAL_RSS_MB,
        goal_met: ratio >= GOAL_RATIO && rssMb <= GOAL_RSS_MB,
      }),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
