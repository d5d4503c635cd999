// Which API tests exercise which files, from V8's own coverage: the API tier runs once with
// NODE_V8_COVERAGE set, and after each test file its process writes the coverage of that run
// (take-coverage.ts), which names the test file and every function that ran. Building the app
// runs the same functions in every test (imports, route registration): a function that ran
// in more than half of the test files is "common" and says nothing about a test. A test
// exercises a file when a function of that file other than a common one ran. A file whose
// functions that ran are all common (app.ts, services.ts, tables of constants) shapes every
// test: it is "wiring", and a change to it runs the whole API tier.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const MAP_FILE = path.join(REPO_ROOT, "node_modules/.cache/berth/api-impact.json");
const COMMON_SHARE = 0.5;

export interface ImpactMap {
  /** The commit the map was built on. */
  commit: string;
  builtAt: string;
  /** Test file → the repository files it exercises (paths relative to the root). */
  tests: Record<string, string[]>;
  /** Files every test runs the same way: a change to one runs the whole tier. */
  wiring: string[];
}

interface FunctionCoverage {
  ranges: { startOffset: number; count: number }[];
}
interface ScriptCoverage {
  url: string;
  functions: FunctionCoverage[];
}

const isTestFile = (rel: string) => rel.endsWith(".test.ts");

/** Repository files (not dependencies) and the offsets of their functions that ran. */
function executed(coverageFile: string): Map<string, Set<number>> {
  const files = new Map<string, Set<number>>();
  let result: ScriptCoverage[];
  try {
    ({ result } = JSON.parse(readFileSync(coverageFile, "utf8")) as { result: ScriptCoverage[] });
  } catch {
    return files; // a process killed while writing it (a test that timed out): it tells nothing
  }
  for (const script of result) {
    if (!script.url.startsWith("file://")) continue;
    const rel = path.relative(REPO_ROOT, fileURLToPath(script.url));
    if (rel.startsWith("..") || rel.includes("node_modules/") || !/\.(ts|js)$/.test(rel)) continue;
    const ran = files.get(rel) ?? new Set<number>();
    for (const fn of script.functions) if ((fn.ranges[0]?.count ?? 0) > 0) ran.add(fn.ranges[0]!.startOffset);
    files.set(rel, ran);
  }
  return files;
}

/** Reads one coverage dump per test process into the map. */
export function mapFromCoverage(dir: string, commit: string): ImpactMap {
  const perTest = new Map<string, Map<string, Set<number>>>();
  for (const name of readdirSync(dir)) {
    const files = executed(path.join(dir, name));
    // The test file that ran since the last take (take-coverage.ts); a process that ran
    // several keeps the earlier ones' scripts, with nothing run.
    for (const [file, ran] of files) if (ran.size === 0) files.delete(file);
    const tests = [...files.keys()].filter(isTestFile);
    if (tests.length !== 1) continue; // vitest's own processes, or a dump of no test file
    perTest.set(tests[0]!, files);
  }
  const runs = new Map<string, number>();
  for (const files of perTest.values()) {
    for (const [file, offsets] of files) for (const o of offsets) runs.set(`${file}:${o}`, (runs.get(`${file}:${o}`) ?? 0) + 1);
  }
  const common = (file: string, offset: number) => (runs.get(`${file}:${offset}`) ?? 0) > perTest.size * COMMON_SHARE;
  const tests: Record<string, string[]> = {};
  const specific = new Set<string>();
  const seen = new Set<string>();
  for (const [test, files] of perTest) {
    const exercised: string[] = [];
    for (const [file, offsets] of files) {
      if (file === test) continue;
      seen.add(file);
      if ([...offsets].some((o) => !common(file, o))) exercised.push(file);
    }
    for (const f of exercised) specific.add(f);
    tests[test] = exercised.sort();
  }
  const wiring = [...seen].filter((f) => !specific.has(f) && !isTestFile(f)).sort();
  return { commit, builtAt: new Date().toISOString(), tests, wiring };
}

export function headCommit(): string {
  return execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
}

/** Runs the API tier once with coverage and stores the map. */
export function buildImpactMap(log: (line: string) => void): ImpactMap {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-impact-"));
  try {
    log("building the API tests' impact map: the API tier runs once with V8 coverage (a few minutes)");
    const run = spawnSync("npx", ["vitest", "run", "--project", "api", "--reporter=dot"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, NODE_V8_COVERAGE: dir, BERTH_IMPACT_MAP: "1" },
    });
    if (run.status !== 0) log(`the API tier failed (exit ${run.status}); the map still records what ran`);
    const map = mapFromCoverage(dir, headCommit());
    mkdirSync(path.dirname(MAP_FILE), { recursive: true });
    writeFileSync(MAP_FILE, JSON.stringify(map));
    log(`impact map: ${Object.keys(map.tests).length} API test files, ${map.wiring.length} wiring files (${path.relative(REPO_ROOT, MAP_FILE)})`);
    return map;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function loadImpactMap(): ImpactMap | undefined {
  if (!existsSync(MAP_FILE)) return undefined;
  return JSON.parse(readFileSync(MAP_FILE, "utf8")) as ImpactMap;
}
