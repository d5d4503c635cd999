// The esbuild bundles the single executables run: the agent's, shared by the packaging
// (build-agent.ts) and the agent benchmark (test/bench/agent), apps/agent/src/cli.ts and
// everything it imports in one CommonJS file, with the dependencies of dependencies the agent
// never calls left out; and the berth CLI's (build-cli.ts), the same way from its entry.
import path from "node:path";
import { build, type BuildOptions, type Metafile, type Plugin } from "esbuild";

/**
 * Packages the agent never calls, replaced in the shipped bundle by stubs: dockerode's SSH
 * transport (ssh2, whose optional native helper is cpu-features) and BuildKit sessions
 * (@grpc/grpc-js, @grpc/proto-loader, protobufjs), which dockerode and docker-modem require
 * when they load. The agent only talks to the local Docker socket; loading them costs ~5 MB
 * of RSS (ssh2 reserves WebAssembly memory at load).
 */
export const AGENT_STUBS: readonly string[] = ["ssh2", "@grpc/grpc-js", "@grpc/proto-loader", "protobufjs", "cpu-features"];

/**
 * Each named package (and its subpaths) becomes a stub. The stub can be required and its
 * properties read; calling or constructing anything from it throws "<package> is left out
 * of this build".
 */
export function stubPlugin(packages: readonly string[]): Plugin {
  const escaped = packages.map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  const filter = new RegExp(`^(?:${escaped.join("|")})(?:/.*)?$`);
  return {
    name: "berth-agent-stub",
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: "berth-agent-stub" }));
      b.onLoad({ filter: /.*/, namespace: "berth-agent-stub" }, (args) => ({
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

export interface AgentBundleOptions {
  /** Checkout to bundle from (holds apps/agent/src/cli.ts). */
  sourceRoot: string;
  outfile: string;
  /** Packages replaced by stubs. Default AGENT_STUBS. */
  stubs?: readonly string[];
  /** Left out of the bundle and required at run time (a plain `node bundle.cjs` run). */
  external?: readonly string[];
  /** Node version the code must run on, e.g. "node24". */
  target: string;
  minify?: boolean;
  /** Replacements of global expressions, e.g. marking a single-executable build. */
  define?: Record<string, string>;
}

export interface BuiltBundle {
  file: string;
  metafile: Metafile;
  warnings: number;
  /** Bytes each package (or workspace folder) contributes to the bundle, biggest first. */
  inputs: { name: string; bytes: number }[];
}

export async function bundleAgentSource(options: AgentBundleOptions): Promise<BuiltBundle> {
  return bundleSource({ ...options, entry: "apps/agent/src/cli.ts", stubs: options.stubs ?? AGENT_STUBS });
}

/** One entry point (relative to sourceRoot) and all it imports in one CommonJS file. */
export async function bundleSource(options: AgentBundleOptions & { entry: string }): Promise<BuiltBundle> {
  const stubs = options.stubs ?? [];
  const build_: BuildOptions & { metafile: true } = {
    absWorkingDir: options.sourceRoot,
    entryPoints: [path.join(options.sourceRoot, options.entry)],
    outfile: options.outfile,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: options.target,
    external: [...(options.external ?? [])],
    metafile: true,
    logLevel: "error",
    plugins: stubs.length > 0 ? [stubPlugin(stubs)] : [],
    minify: options.minify === true,
    define: options.define ?? {},
  };
  const result = await build(build_);
  const output = Object.values(result.metafile.outputs)[0] as Metafile["outputs"][string];
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const name = packageOf(input);
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
  }
  return {
    file: options.outfile,
    metafile: result.metafile,
    warnings: result.warnings.length,
    inputs: [...byPackage].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes),
  };
}
