// The page-out addon (apps/agent/native/page-out.c, plain C against Node-API) compiled for the
// Node the executable ships on (Node 24 from the node-linux-<arch> package): one C compiler
// call, cached under installers/.cache keyed by its source, Node and architecture. The
// executable's only native code besides Node: the journal's SQLite is Node's own (node:sqlite).
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { compilerFor, runTarget, type Arch } from "./cross.ts";

const exec = promisify(execFile);

export interface NativeAddonOptions {
  /** Node's headers: the directory holding include/node (the node-linux-<arch> package). */
  nodeDir: string;
  /** Target Node's version, part of the cache key, and its binary to check the result with. */
  nodeVersion: string;
  nodeBinary: string;
  /** The executable's architecture; another than this machine's is cross-compiled (cross.ts). */
  arch: Arch;
  cacheDir: string;
}

/**
 * Returns the path of berth_page_out.node (apps/agent/native/page-out.c, plain C against
 * Node-API) built for the target.
 */
export async function buildPageOutAddon(options: NativeAddonOptions & { source: string }): Promise<string> {
  const key = createHash("sha256")
    .update(`v1 node@${options.nodeVersion} ${options.arch}\n`)
    .update(readFileSync(options.source))
    .digest("hex")
    .slice(0, 16);
  const cached = path.join(options.cacheDir, `page-out-${key}`, "berth_page_out.node");
  if (existsSync(cached)) return cached;
  mkdirSync(path.dirname(cached), { recursive: true });
  const cc = compilerFor(options.arch);
  const include = path.join(options.nodeDir, "include/node");
  try {
    await exec(cc, ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-s", `-I${include}`, "-o", `${cached}.tmp`, options.source]);
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`compiling ${path.basename(options.source)} failed: ${e.message}\n${(e.stderr ?? "").slice(-4000)}`);
  }
  try {
    await runTarget(options.arch, options.nodeBinary, ["-e", "process.dlopen({ exports: {} }, process.argv[1])", `${cached}.tmp`]);
  } catch (error) {
    throw new Error(`the compiled ${path.basename(cached)} does not load in Node ${options.nodeVersion}: ${(error as { stderr?: string }).stderr ?? String(error)}`);
  }
  renameSync(`${cached}.tmp`, cached);
  return cached;
}
