// The agent as it would ship: apps/agent/src/cli.ts and everything it imports bundled by
// esbuild into one CommonJS file for Node 22+ (its journal on node:sqlite, nothing native
// beside it), so what is measured is `node agent.cjs run`, not tsx.
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { bundleAgentSource, packageOf } from "../../../installers/build/bundle.ts";

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
 * External, never bundled: the optional native helpers of ssh2 when ssh2 itself is not stubbed
 * (it requires them in a try/catch and falls back to JavaScript when they are missing, as they
 * are beside this bundle).
 */
const EXTERNAL = ["cpu-features", "*.node"];

// The stubs and the bundling are the packaging's own (installers/build/bundle.ts).
export { packageOf };

export interface BundleOptions {
  /** Packages replaced by stubs (see stubPlugin). */
  stubs?: readonly string[];
  /** esbuild's minify: a smaller source string for V8 to keep; moduleAt then knows no module. */
  minify?: boolean;
}

export async function bundleAgent(sourceRoot: string, outDir: string, options: BundleOptions = {}): Promise<AgentBundle> {
  const stubs = options.stubs ?? [];
  const file = path.join(outDir, "berth-agent.cjs");
  const result = await bundleAgentSource({
    sourceRoot,
    outfile: file,
    stubs,
    external: EXTERNAL,
    target: "node22",
    minify: options.minify === true,
  });
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
    inputs: result.inputs,
    moduleAt,
    warnings: result.warnings,
  };
}
