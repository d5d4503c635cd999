// `npm run build:cli`: the berth CLI as one self-contained executable for Linux,
// installers/dist/berth-linux-<arch>, made as the agent's is (build-agent.ts): esbuild bundles
// apps/control-plane/src/cli/bin.ts into one CommonJS file (bundle.ts), Node's single
// executable application support and postject put it into a copy of the Node of the npm
// package node-linux-<arch> (Node 24). The CLI needs no addon and no asset.
//
// Usage: npm run build:cli [-- --out DIR] [--arch x64] [--force]
// A build whose inputs (the CLI's and the API client's sources, lockfile, these scripts, the
// Node binary) did not change is skipped.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { CLI_VERSION } from "../../apps/control-plane/src/cli/main.ts";
import { CACHE_DIR, DEFAULT_DIST_DIR, filesUnder, makeSeaExecutable, nodePackageDir, parseBuildArgs, REPO_ROOT, reportBuild, sha256File, type BuiltExecutable } from "./build-agent.ts";
import { bundleSource } from "./bundle.ts";
import { assertCanBuild, runTarget, type Arch } from "./cross.ts";

const CLI_ENTRY = "apps/control-plane/src/cli/bin.ts";

export interface CliBuildOptions {
  outDir?: string;
  arch?: Arch;
  force?: boolean;
  log?: (line: string) => void;
}

export function cliExecutableName(arch: Arch): string {
  return `berth-linux-${arch}`;
}

/** A digest of everything the executable is made from. */
function inputsKey(arch: Arch, nodeBinary: string): string {
  const hash = createHash("sha256").update(`${arch} ${CLI_VERSION}\n`);
  const source = (f: string) => f.endsWith(".ts") && !f.endsWith(".test.ts");
  const files = [
    ...filesUnder(path.join(REPO_ROOT, "apps/control-plane/src/cli"), source),
    ...filesUnder(path.join(REPO_ROOT, "packages/protocol/src/api-client"), source),
    ...filesUnder(path.join(REPO_ROOT, "installers/build"), (f) => f.endsWith(".ts")),
    path.join(REPO_ROOT, "package-lock.json"),
  ];
  for (const f of files) hash.update(`${path.relative(REPO_ROOT, f)}\n`).update(readFileSync(f));
  const st = statSync(nodeBinary);
  hash.update(`${st.size} ${st.mtimeMs}`);
  return hash.digest("hex").slice(0, 24);
}

export async function buildCliExecutable(options: CliBuildOptions = {}): Promise<BuiltExecutable> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const arch = options.arch ?? "x64";
  assertCanBuild(arch);
  const outDir = path.resolve(options.outDir ?? DEFAULT_DIST_DIR);
  const name = cliExecutableName(arch);
  const target = path.join(outDir, name);
  const nodeBinary = path.join(await nodePackageDir(arch, log), "bin/node");
  const key = inputsKey(arch, nodeBinary);
  const stamp = path.join(outDir, `.${name}.inputs`);
  const result = async (built: boolean): Promise<BuiltExecutable> => ({
    file: target,
    name,
    sha256: await sha256File(target),
    sizeBytes: statSync(target).size,
    version: CLI_VERSION,
    built,
    ms: Date.now() - started,
  });

  if (!options.force && existsSync(target) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === key) return result(false);

  const { stdout: nodeVersion } = await runTarget(arch, nodeBinary, ["--version"]);
  const work = path.join(CACHE_DIR, `sea-cli-${key}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const bundle = await bundleSource({
      sourceRoot: REPO_ROOT,
      entry: CLI_ENTRY,
      outfile: path.join(work, "berth.cjs"),
      target: `node${nodeVersion.trim().replace(/^v/, "").split(".")[0]}`,
      minify: true,
    });
    log(`bundled the CLI: ${Math.round(statSync(bundle.file).size / 1024)} KB`);
    const exe = await makeSeaExecutable({ arch, nodeBinary, main: bundle.file, work, name, log });
    // It must run: a broken build is not kept.
    const { stdout } = await runTarget(arch, exe, ["--version"], { env: { PATH: "/usr/bin:/bin" } });
    if (stdout.trim() !== CLI_VERSION) throw new Error(`the built executable printed ${JSON.stringify(stdout.trim())} for --version, expected ${CLI_VERSION}`);
    mkdirSync(outDir, { recursive: true });
    renameSync(exe, target);
    writeFileSync(stamp, `${key}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return result(true);
}

async function cli(argv: string[]): Promise<number> {
  const { values: _none, ...common } = parseBuildArgs(argv, "build-cli.ts [--out DIR] [--arch x64] [--force]");
  reportBuild(await buildCliExecutable({ log: (line) => process.stderr.write(`[build:cli] ${line}\n`), ...common }));
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`build:cli: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
