// `npm run test:quick [-- <since>] [--rebuild-map]`: the unit and API tests of what changed
// since <since> (default HEAD: the work not yet committed), for the edit-and-test loop;
// `npm test` still runs every tier.
// - Unit tests: vitest's own choice (--changed), by the import graph.
// - API tests: every test imports the whole control plane, so the import graph would pick
//   them all. They are picked by what they exercise instead (impact-map.ts), plus every
//   API test file that changed, plus the API documents' tests when a route or schema file
//   changed (route schemas are read when the app is built, in every test alike). A change
//   to wiring, configuration, dependencies, migrations or the test set-up runs them all.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { TIERS } from "../tiers.ts";
import { buildImpactMap, headCommit, loadImpactMap, REPO_ROOT, type ImpactMap } from "./impact-map.ts";

const log = (line: string) => process.stderr.write(`[test:quick] ${line}\n`);
const API = TIERS.find((t) => t.name === "api")!;

/** The tests of the API documents every route's schema feeds. */
const DOCUMENT_TESTS = /^test\/(docs\/api-client|platform-api\/(openapi|operation-ids|request-examples)|public-api\/errors-and-docs)\.test\.ts$/;
/** Files whose change can alter any API test: run them all. */
const EVERYTHING = /^(package(-lock)?\.json|vitest\.config\.ts|tsconfig[^/]*\.json|test\/(tiers\.ts|setup\/)|packages\/db\/(migrations\/|src\/schema)|apps\/[^/]+\/package\.json)/;

function git(args: string[]): string[] {
  return execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" }).split("\n").filter(Boolean);
}

function isApiTest(rel: string): boolean {
  return API.include.some((g) => path.matchesGlob(rel, g)) && !API.exclude.some((g) => path.matchesGlob(rel, g));
}

export function apiTestsFor(changed: string[], map: ImpactMap): { files: string[]; all: boolean; reason?: string } {
  const all = Object.keys(map.tests).filter((t) => existsSync(path.join(REPO_ROOT, t)));
  const picked = new Set<string>();
  const wiring = new Set(map.wiring);
  for (const file of changed) {
    if (EVERYTHING.test(file)) return { files: all, all: true, reason: file };
    if (wiring.has(file)) return { files: all, all: true, reason: `${file} (wiring)` };
    if (isApiTest(file)) {
      if (existsSync(path.join(REPO_ROOT, file))) picked.add(file);
      continue;
    }
    for (const [test, exercised] of Object.entries(map.tests)) if (exercised.includes(file)) picked.add(test);
    if (/^apps\/control-plane\/src\/.*(\.routes|schemas)\.ts$/.test(file)) for (const t of all) if (DOCUMENT_TESTS.test(t)) picked.add(t);
  }
  return { files: [...picked].filter((t) => existsSync(path.join(REPO_ROOT, t))).sort(), all: false };
}

function vitest(args: string[]): number {
  const run = spawnSync("npx", ["vitest", "run", ...args], { cwd: REPO_ROOT, stdio: "inherit" });
  return run.status ?? 1;
}

function main(argv: string[]): number {
  const rebuild = argv.includes("--rebuild-map");
  const since = argv.find((a) => !a.startsWith("--")) ?? "HEAD";
  const changed = [...new Set([...git(["diff", "--name-only", since]), ...git(["ls-files", "--others", "--exclude-standard"])])];
  if (changed.length === 0) {
    log(`nothing changed since ${since}`);
    return 0;
  }
  let map = rebuild ? undefined : loadImpactMap();
  if (map === undefined) map = buildImpactMap(log);
  else if (map.commit !== headCommit()) log(`impact map from ${map.commit.slice(0, 10)} (${map.builtAt}); \`npm run test:quick -- --rebuild-map\` refreshes it`);
  const started = Date.now();
  log(`${changed.length} changed file(s) since ${since}`);
  const unit = vitest(["--project", "unit", "--changed", since, "--passWithNoTests"]);
  const api = apiTestsFor(changed, map);
  log(api.all ? `all ${api.files.length} API test files: ${api.reason} changed` : `${api.files.length} API test file(s) exercise what changed`);
  const apiStatus = api.files.length === 0 ? 0 : vitest(["--project", "api", ...api.files]);
  log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  return unit !== 0 ? unit : apiStatus;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
