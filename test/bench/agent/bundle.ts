// The agent as it would ship: apps/agent/src/cli.ts and everything it imports bundled by
// esbuild into one CommonJS file for Node 20, with better-sqlite3 (a native addon) beside it
// in node_modules, so what is measured is `node agent.cjs run`, not tsx.
import { mkdir, readFile, stat, symlink } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { build, type Metafile, type Plugin } from "esbuild";

export interface AgentBundle {
  /** The bundle; run it with the directory holding it as the working directory. */
  file: string;
  dir: string;
  sizeBytes: number;
  /** Bytes each package (or workspace folder) contributes to the bundle, biggest first. */
  inputs: { name: string; bytes: number }[];
  /** The module whose code is at a line of the bundle (1-based), from esbuild's path comments. */
  moduleAt(line: number): string;
  warnings: number;
}

/**
 * External, never bundled: better-sqlite3 (native, installed beside the bundle), and the
 * optional native helpers of ssh2 (dockerode's SSH transport, which the agent does not use):
 * ssh2 requires them in a try/catch and falls back to JavaScript when they are missing, as
 * they are beside this bundle.
 */
const EXTERNAL = ["better-sqlite3", "cpu-features", "*.node"];

/**
 * What-if packaging: each named package (and its subpaths) becomes a stub in the bundle. The
 * stub can be required and its properties read; calling or constructing anything from it
 * throws "<package> is left out of this build". For dependencies of dependencies the agent
 * never calls: dockerode's SSH transport (ssh2) and BuildKit sessions (@grpc/grpc-js,
 * @grpc/proto-loader), which dockerode and docker-modem require when they load.
 */
function stubPlugin(packages: readonly string[]): Plugin {
  const escaped = packages.map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  const filter = new RegExp(`^(?:${escaped.join("|")})(?:/.*)?$`);
  return {
    name: "bench-agent-stub",
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "bench-agent-stub" }));
      b.onLoad({ filter: /.*/, namespace: "bench-agent-stub" }, (args) => ({
        loader: "js",
        contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is left out of this build`)}); };
module.exports = new Proxy(fail, { get: (_, key) => (key === "__esModule" || typeof key === "symbol" ? undefined : fail), apply: fail });
`,
      }));
    },
  };
}

/** node_modules/<package> (scoped ones with their scope) or apps/<x>, packages/<x>. */
export function packageOf(input: string): string {
  const nm = input.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const [first = "", second = ""] = input.slice(nm + "node_modules/".length).split("/");
    return first.startsWith("@") ? `${first}/${second}` : first;
  }
  const ws = /(?:^|\/)((?:apps|packages)\/[^/]+)\//.exec(input);
  return ws?.[1] ?? input;
}

export interface BundleOptions {
  /** Packages replaced by stubs (see stubPlugin). */
  stubs?: readonly string[];
  /** esbuild's minify: a smaller source string for V8 to keep; moduleAt then knows no module. */
  minify?: boolean;
}

export async function bundleAgent(sourceRoot: string, outDir: string, options: BundleOptions = {}): Promise<AgentBundle> {
  const stubs = options.stubs ?? [];
  const entry = path.join(sourceRoot, "apps/agent/src/cli.ts");
  const file = path.join(outDir, "berth-agent.cjs");
  const result = await build({
    absWorkingDir: sourceRoot,
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: EXTERNAL,
    metafile: true,
    logLevel: "error",
    plugins: stubs.length > 0 ? [stubPlugin(stubs)] : [],
    minify: options.minify === true,
  });
  // better-sqlite3 as an installer would put it: <dir>/node_modules/better-sqlite3 (its own
  // dependency, `bindings`, resolves from the real path behind the link).
  const agentRequire = createRequire(path.join(sourceRoot, "apps/agent/package.json"));
  const sqliteDir = path.dirname(agentRequire.resolve("better-sqlite3/package.json"));
  await mkdir(path.join(outDir, "node_modules"), { recursive: true });
  await symlink(sqliteDir, path.join(outDir, "node_modules/better-sqlite3"), "dir");

  const output = Object.values(result.metafile.outputs)[0] as Metafile["outputs"][string];
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const name = packageOf(input);
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
  }

  // esbuild starts each module's code with a "// <path>" comment line when not minifying.
  const starts: { line: number; module: string }[] = [];
  const lines = (await readFile(file, "utf8")).split("\n");
  lines.forEach((text, i) => {
    const m = /^\/\/ (\S+\.(?:[cm]?[jt]s|json))$/.exec(text);
    if (m) starts.push({ line: i + 1, module: packageOf(m[1]!) });
  });
  const moduleAt = (line: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = "(bundle prologue)";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]!.line <= line) {
        found = starts[mid]!.module;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  };

  return {
    file,
    dir: outDir,
    sizeBytes: (await stat(file)).size,
    inputs: [...byPackage].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes),
    moduleAt,
    warnings: result.warnings.length,
  };
}
