// `npm run build:agent`: the agent as one self-contained executable for Linux,
// installers/dist/berth-agent-linux-<arch>, and SHA256SUMS beside it.
//
// How: esbuild bundles apps/agent/src/cli.ts into one CommonJS file (bundle.ts); Node's
// single-executable-application support turns it into a blob, with the page-out addon
// (apps/agent/native, compiled for that Node, native-addon.ts) and uninstall.sh as assets;
// postject injects the blob into a copy of the Node binary. The journal's SQLite is Node's
// own (node:sqlite), so no SQLite addon is compiled or packed. The
// Node is the LTS of the npm package node-linux-<arch> (Node 24), not the Node running this
// script: a blob only runs on the Node that made it.
//
// Usage: npm run build:agent [-- --out DIR] [--arch x64] [--version-override 1.2.3] [--force]
// A build whose inputs (agent and protocol sources, lockfile, these scripts, the Node binary)
// did not change is skipped. `--arch arm64` on an x64 machine (or the reverse) cross-compiles
// the page-out addon and runs the target's Node under qemu-user (cross.ts says what to install).
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { bundleAgentSource } from "./bundle.ts";
import { buildPageOutAddon } from "./native-addon.ts";
import { assertCanBuild, runTarget, stripFor, type Arch } from "./cross.ts";

const exec = promisify(execFile);

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const DEFAULT_DIST_DIR = path.join(REPO_ROOT, "installers/dist");
export const CACHE_DIR = path.join(REPO_ROOT, "installers/.cache");
const AGENT_DIR = path.join(REPO_ROOT, "apps/agent");
const PAGE_OUT_SOURCE = path.join(AGENT_DIR, "native/page-out.c");
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";
/**
 * Node options baked into the executable (the SEA's execArgv): they cut idle memory without
 * changing what the agent does; measured by `npm run bench:agent` (test/bench/agent.bench.ts
 * explains each).
 */
export const EXECUTABLE_NODE_FLAGS = ["--max-semi-space-size=1", "--single-threaded"];

export type { Arch };

export interface BuildOptions {
  outDir?: string;
  arch?: Arch;
  /** Builds an executable reporting this version instead of apps/agent's (update tests). */
  versionOverride?: string;
  force?: boolean;
  /** Node options to bake in instead of EXECUTABLE_NODE_FLAGS (bench:agent's BENCH_EXE_TRY). */
  nodeFlags?: readonly string[];
  log?: (line: string) => void;
}

export interface BuiltExecutable {
  file: string;
  name: string;
  sha256: string;
  sizeBytes: number;
  version: string;
  /** False when an up-to-date build was reused. */
  built: boolean;
  ms: number;
}

export function executableName(arch: Arch): string {
  return `berth-agent-linux-${arch}`;
}

/** The Node LTS the executable ships on, when the node-linux-<arch> package is not installed. */
export const NODE_LTS_VERSION = "24.21.0";

/**
 * Node's binary and headers for the target: the node-linux-<arch> package when installed
 * (apps/agent's devDependency), else that package fetched once with `npm pack` into the
 * cache, so the build does not need it in node_modules (where its `node` bin would shadow
 * the developer's Node in every npm script).
 */
export async function nodePackageDir(arch: Arch, log: (line: string) => void): Promise<string> {
  const require_ = createRequire(path.join(AGENT_DIR, "package.json"));
  try {
    return path.dirname(require_.resolve(`node-linux-${arch}/package.json`));
  } catch {
    // not installed: fetch it below
  }
  const dir = path.join(CACHE_DIR, `node-linux-${arch}-${NODE_LTS_VERSION}`);
  const pkg = path.join(dir, "package");
  if (existsSync(path.join(pkg, "bin/node"))) return pkg;
  log(`fetching node-linux-${arch}@${NODE_LTS_VERSION} from the npm registry (once)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const { stdout } = await exec("npm", ["pack", `node-linux-${arch}@${NODE_LTS_VERSION}`, "--pack-destination", dir, "--silent"], { maxBuffer: 16 * 1024 * 1024 });
    const tarball = stdout.trim().split("\n").pop() ?? "";
    await exec("tar", ["-xzf", path.join(dir, tarball), "-C", dir]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`no Node ${arch} binary to build from: node-linux-${arch} is not installed and npm pack failed (${error instanceof Error ? error.message : String(error)})`);
  }
  return pkg;
}

export function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full, keep));
    else if (keep(full)) out.push(full);
  }
  return out.sort();
}

/** A digest of everything the executable is made from. */
function inputsKey(arch: Arch, nodeBinary: string, version: string, nodeFlags: readonly string[]): string {
  const hash = createHash("sha256").update(`${arch} ${version} ${nodeFlags.join(" ")}\n`);
  const notTest = (f: string) => f.endsWith(".ts") && !/\.test(-helpers)?\.ts$/.test(f) && !f.endsWith(".test.ts");
  const files = [
    ...filesUnder(path.join(AGENT_DIR, "src"), notTest),
    ...filesUnder(path.join(REPO_ROOT, "packages/protocol/src"), notTest),
    PAGE_OUT_SOURCE,
    ...filesUnder(path.join(REPO_ROOT, "installers/build"), (f) => f.endsWith(".ts")),
    path.join(REPO_ROOT, "installers/uninstall.sh"),
    path.join(REPO_ROOT, "package-lock.json"),
  ];
  for (const f of files) hash.update(`${path.relative(REPO_ROOT, f)}\n`).update(readFileSync(f));
  const st = statSync(nodeBinary);
  hash.update(`${st.size} ${st.mtimeMs}`);
  return hash.digest("hex").slice(0, 24);
}

function agentVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(AGENT_DIR, "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

export async function sha256File(file: string): Promise<string> {
  const { createReadStream } = await import("node:fs");
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * What the control plane serves from this directory: manifest.json (version, and per
 * architecture file, sha256, size) and the installer scripts, refreshed on every call.
 */
async function publish(dir: string, arch: Arch, version: string, name: string, sha256: string, size: number): Promise<void> {
  const file = path.join(dir, "manifest.json");
  let manifest: { version: string; executables: Record<string, unknown> } = { version, executables: {} };
  try {
    const old = JSON.parse(readFileSync(file, "utf8")) as typeof manifest;
    // Executables of another version are stale beside this one.
    if (old.version === version) manifest = old;
  } catch {
    // none yet
  }
  manifest.executables[arch] = { file: name, sha256, size };
  writeFileSync(`${file}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  for (const script of ["install.sh", "uninstall.sh"]) {
    copyFileSync(path.join(REPO_ROOT, "installers", script), path.join(dir, `.${script}.tmp`));
    chmodSync(path.join(dir, `.${script}.tmp`), 0o755);
    renameSync(path.join(dir, `.${script}.tmp`), path.join(dir, script));
  }
}

/** Writes SHA256SUMS for every berth-agent-linux-* in dir, in `sha256sum -c` format. */
async function writeChecksums(dir: string): Promise<void> {
  const lines: string[] = [];
  for (const name of readdirSync(dir).filter((n) => /^berth-agent-linux-[a-z0-9]+$/.test(n)).sort()) {
    lines.push(`${await sha256File(path.join(dir, name))}  ${name}`);
  }
  writeFileSync(path.join(dir, ".SHA256SUMS.tmp"), `${lines.join("\n")}\n`);
  renameSync(path.join(dir, ".SHA256SUMS.tmp"), path.join(dir, "SHA256SUMS"));
}

export interface SeaOptions {
  arch: Arch;
  /** The target's Node binary the executable is a copy of. */
  nodeBinary: string;
  /** The CommonJS bundle the executable runs. */
  main: string;
  /** A scratch directory of this build; the executable is made there. */
  work: string;
  /** The executable's file name. */
  name: string;
  /** Node options baked in (the SEA's execArgv). */
  execArgv?: readonly string[];
  /** Files the program reads with node:sea getAsset, by name. */
  assets?: Record<string, string>;
  log: (line: string) => void;
}

/**
 * Node's single-executable application: the blob of `main` (and assets) made by the target's
 * Node, injected by postject into a stripped copy of that Node. Returns the executable's path
 * in `work`; the caller checks it runs and moves it into place.
 */
export async function makeSeaExecutable(o: SeaOptions): Promise<string> {
  const seaConfig = {
    main: o.main,
    output: path.join(o.work, "sea-prep.blob"),
    disableExperimentalSEAWarning: true,
    // A code cache is keyed by V8's flags, so with execArgv Node rejects it at start.
    useCodeCache: false,
    useSnapshot: false,
    execArgv: [...(o.execArgv ?? [])],
    assets: o.assets ?? {},
  };
  writeFileSync(path.join(o.work, "sea-config.json"), JSON.stringify(seaConfig, null, 2));
  await runTarget(o.arch, o.nodeBinary, ["--experimental-sea-config", path.join(o.work, "sea-config.json")], { cwd: o.work });

  const exe = path.join(o.work, o.name);
  copyFileSync(o.nodeBinary, exe);
  chmodSync(exe, 0o755);
  // The package's Node carries its symbol table and debug information (~15 MB); the
  // executable needs neither (addons link against the dynamic symbols, which stay). Before
  // the injection: stripping moves sections and would break the injected blob.
  try {
    await exec(stripFor(o.arch), [exe]);
  } catch (error) {
    o.log(`strip failed, keeping the debug information: ${error instanceof Error ? error.message : String(error)}`);
  }
  const postject = createRequire(path.join(AGENT_DIR, "package.json")).resolve("postject/dist/cli.js");
  await exec(process.execPath, [postject, exe, "NODE_SEA_BLOB", seaConfig.output, "--sentinel-fuse", SEA_FUSE], { cwd: o.work });
  return exe;
}

export async function buildAgentExecutable(options: BuildOptions = {}): Promise<BuiltExecutable> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const arch = options.arch ?? "x64";
  assertCanBuild(arch);
  const outDir = path.resolve(options.outDir ?? DEFAULT_DIST_DIR);
  const name = executableName(arch);
  const target = path.join(outDir, name);
  const nodeDir = await nodePackageDir(arch, log);
  const nodeBinary = path.join(nodeDir, "bin/node");
  const version = options.versionOverride ?? agentVersion();
  const nodeFlags = options.nodeFlags ?? EXECUTABLE_NODE_FLAGS;
  const key = inputsKey(arch, nodeBinary, version, nodeFlags);
  const stamp = path.join(outDir, `.${name}.inputs`);

  if (!options.force && existsSync(target) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === key) {
    const sha256 = await sha256File(target);
    const sizeBytes = statSync(target).size;
    await publish(outDir, arch, version, name, sha256, sizeBytes);
    return { file: target, name, sha256, sizeBytes, version, built: false, ms: Date.now() - started };
  }

  const { stdout: nodeVersionOut } = await runTarget(arch, nodeBinary, ["--version"]);
  const nodeVersion = nodeVersionOut.trim().replace(/^v/, "");
  const pageOutAddon = await buildPageOutAddon({ source: PAGE_OUT_SOURCE, nodeDir, nodeVersion, nodeBinary, arch, cacheDir: CACHE_DIR });

  const work = path.join(CACHE_DIR, `sea-${key}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const bundle = await bundleAgentSource({
      sourceRoot: REPO_ROOT,
      outfile: path.join(work, "berth-agent.cjs"),
      target: `node${nodeVersion.split(".")[0]}`,
      minify: true,
      define: {
        // The agent keeps a verified copy of its addon in its state directory (apps/agent/src/native/packed-addons.ts).
        __BERTH_ADDON_SHA256__: JSON.stringify({ "berth_page_out.node": await sha256File(pageOutAddon) }),
        ...(options.versionOverride ? { __BERTH_AGENT_VERSION__: JSON.stringify(options.versionOverride) } : {}),
      },
    });
    log(`bundled the agent: ${Math.round(statSync(bundle.file).size / 1024)} KB`);
    const exe = await makeSeaExecutable({
      arch,
      nodeBinary,
      main: bundle.file,
      work,
      name,
      execArgv: nodeFlags,
      assets: {
        "berth_page_out.node": pageOutAddon,
        "uninstall.sh": path.join(REPO_ROOT, "installers/uninstall.sh"),
      },
      log,
    });

    // It must run: a broken build is not published.
    const { stdout } = await runTarget(arch, exe, ["--version"], { env: { PATH: "/usr/bin:/bin" } });
    if (stdout.trim() !== version) throw new Error(`the built executable printed ${JSON.stringify(stdout.trim())} for --version, expected ${version}`);

    mkdirSync(outDir, { recursive: true });
    renameSync(exe, target);
    await writeChecksums(outDir);
    writeFileSync(stamp, `${key}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const sha256 = await sha256File(target);
  const sizeBytes = statSync(target).size;
  await publish(outDir, arch, version, name, sha256, sizeBytes);
  return { file: target, name, sha256, sizeBytes, version, built: true, ms: Date.now() - started };
}

/**
 * The command line the build scripts share: --out DIR, --arch x64|arm64, --force, and the
 * value options a script adds (`extra`, e.g. --version-override); `usage` names the script's.
 */
export function parseBuildArgs(argv: string[], usage: string, extra: readonly string[] = []): { outDir?: string; arch?: Arch; force?: boolean; values: Record<string, string> } {
  const parsed: { outDir?: string; arch?: Arch; force?: boolean; values: Record<string, string> } = { values: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === "--out") parsed.outDir = value();
    else if (arg === "--arch") {
      const a = value();
      if (a !== "x64" && a !== "arm64") throw new Error(`--arch must be x64 or arm64, got ${a}`);
      parsed.arch = a;
    } else if (arg === "--force") parsed.force = true;
    else if (extra.includes(arg)) parsed.values[arg] = value();
    else throw new Error(`unknown argument ${arg} (usage: ${usage})`);
  }
  return parsed;
}

/** What a build script prints when it is done: the file, its size and version, and its SHA-256. */
export function reportBuild(r: Pick<BuiltExecutable, "file" | "sizeBytes" | "version" | "built" | "ms" | "sha256">): void {
  const mb = (r.sizeBytes / 1024 / 1024).toFixed(1);
  process.stdout.write(`${r.built ? "built" : "up to date:"} ${r.file} (${mb} MB, version ${r.version}${r.built ? `, ${(r.ms / 1000).toFixed(1)} s` : ""})\nsha256 ${r.sha256}\n`);
}

async function cli(argv: string[]): Promise<number> {
  const { values, ...common } = parseBuildArgs(argv, "build-agent.ts [--out DIR] [--arch x64] [--version-override V] [--force]", ["--version-override"]);
  const options: BuildOptions = { log: (line) => process.stderr.write(`[build:agent] ${line}\n`), ...common };
  if (values["--version-override"] !== undefined) options.versionOverride = values["--version-override"];
  reportBuild(await buildAgentExecutable(options));
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`build:agent: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
