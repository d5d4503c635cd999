// `npm run bench:proxy`: what the reverse proxy costs. The agent's own handlers deploy an
// ERP stand-in (berth-test/erp:17.0) behind the server's proxy (berth-test/caddy:2, Debian's
// Caddy) with a certificate from Pebble; then, in the same run, small GETs of /web/health:
//
//   PROXY   HTTPS to Caddy's container address, SNI and Host the environment's domain,
//           verified against Pebble's root (what a browser does; a server with Docker's
//           iptables DNAT delivers port 443 to that address as directly)
//   DIRECT  HTTP to the ERP container's address on its network, port 8069
//
// Rounds alternate which goes first. Throughput is as fast as the clients go; the load
// generator, the proxy and the ERP share this machine's cores, so the proxy's CPU per request
// (its container's cgroup time over the requests it served) is reported beside it. Latency
// is compared at a fixed BENCH_RATE, well under both sides' capacity: at saturation p99 is
// queueing, not the proxy. Goals: proxy >= 90 % of direct throughput; p99 at the fixed rate
// at most 2 ms above direct's. Then route changes under load: while PROXY load runs, another
// environment's route is switched between serving and maintenance BENCH_CHANGES times; each
// change is timed from the call until the new page answers, and every failed request of the
// load is counted. Goal: every change <= 1 s, 0 failed requests.
//
// Environment: BENCH_ROUNDS (3), BENCH_DURATION_S (8), BENCH_CONNECTIONS (20), BENCH_CHANGES (10),
// BENCH_RATE (500 requests per second for the latency comparison).
// Needs `bash .ci/docker-setup.sh` (Docker, the test images, Pebble).
import { randomUUID } from "node:crypto";
import { request as httpsRequest } from "node:https";
import Dockerode from "dockerode";
import autocannon, { type Result } from "autocannon";
import { freePort, startAcmeWorld, type AcmeWorld } from "../../apps/agent/src/proxy/acme-world.test-helpers.ts";
import {
  createExecutorHarness,
  deployParams,
  finishSuite,
  PROXY_IMAGE,
  requireTestImages,
  type ExecutorHarness,
} from "../../apps/agent/src/executor/executor.test-helpers.ts";
import { setting } from "./settings.ts";

const ROUNDS = Math.round(setting("BENCH_ROUNDS", 3, 1));
const DURATION_S = Math.round(setting("BENCH_DURATION_S", 8, 1));
const CONNECTIONS = Math.round(setting("BENCH_CONNECTIONS", 20, 1));
const CHANGES = Math.round(setting("BENCH_CHANGES", 10, 1));
const RATE = Math.round(setting("BENCH_RATE", 500, 1));
const SUITE = "bench-proxy";
const SHOP = "bench.berth.test";
const OTHER = "other.berth.test";
const GOAL_RATIO = 0.9;
const GOAL_P99_DELTA_MS = 2;
const GOAL_CHANGE_MS = 1000;

const docker = new Dockerode();

async function addressOn(container: string, network: string): Promise<string> {
  const info = await docker.getContainer(container).inspect();
  const address = info.NetworkSettings.Networks[network]?.IPAddress;
  if (!address) throw new Error(`${container} has no address on ${network}`);
  return address;
}

function run(options: Parameters<typeof autocannon>[0]): Promise<Result> {
  return Promise.resolve(autocannon(options));
}

/** One HTTPS GET through the proxy: its status, or 0 when it failed. */
function statusThroughProxy(proxyAddress: string, name: string, root: string): Promise<number> {
  return new Promise((resolve) => {
    const request = httpsRequest(
      { host: proxyAddress, port: 443, path: "/web/health", servername: name, headers: { host: name }, ca: root, agent: false, timeout: 2_000 },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("error", () => resolve(0));
    request.on("timeout", () => request.destroy());
    request.end();
  });
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  failed: number;
}

/** CPU time a container has used, in microseconds (its cgroup's counter, through the engine). */
async function cpuMicros(container: string): Promise<number> {
  const stats = (await docker.getContainer(container).stats({ stream: false })) as unknown as { cpu_stats: { cpu_usage: { total_usage: number } } };
  return stats.cpu_stats.cpu_usage.total_usage / 1000;
}

function figures(result: Result): Figures {
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failed: result.errors + result.timeouts + result.non2xx };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function main(): Promise<void> {
  let world: AcmeWorld | null = null;
  let h: ExecutorHarness | null = null;
  try {
    const [http, https] = await Promise.all([freePort(), freePort()]);
    world = await startAcmeWorld({ httpPort: http });
    for (const name of [SHOP, OTHER]) await world.setA(name, ["127.0.0.1"]);
    h = createExecutorHarness(SUITE, {}, { httpPort: String(http), httpsPort: String(https), dnsServers: [world.dnsServer], certificateWaitMs: 60_000 });
    await requireTestImages(h.docker);
    const root = await world.issuingRoot();
    const proxySettings = { image: PROXY_IMAGE, acme_ca: world.directory, acme_ca_root: world.listenerCaPem, acme_email: null };
    const shop = randomUUID();
    const other = randomUUID();
    for (const [env, domain] of [
      [shop, SHOP],
      [other, OTHER],
    ] as const) {
      const deployed = await h.run("deploy", deployParams(env, { domain, proxy: proxySettings }));
      if (!deployed.outcome.ok) throw new Error(`deploy of ${domain} failed: ${deployed.outcome.error.message}`);
      if (!deployed.logs.some((l) => l.message.startsWith(`Certificate for ${domain} valid until`))) throw new Error(`no certificate for ${domain}`);
    }
    const proxyAddress = await addressOn(h.proxy.host.name, h.proxy.host.name);
    const erpAddress = await addressOn(`berth-${shop}-erp`, `berth-${shop}`);

    const proxied = (duration: number, rate?: number) =>
      run({
        ...(rate === undefined ? {} : { overallRate: rate }),
        url: `https://${proxyAddress}:443/web/health`,
        servername: SHOP,
        headers: { host: SHOP },
        tlsOptions: { ca: root, rejectUnauthorized: true },
        connections: CONNECTIONS,
        duration,
      });
    const direct = (duration: number, rate?: number) =>
      run({ url: `http://${erpAddress}:8069/web/health`, connections: CONNECTIONS, duration, ...(rate === undefined ? {} : { overallRate: rate }) });

    // Warm-up: connections, Caddy's upstream pool, the kernel's caches.
    await proxied(2);
    await direct(2);
    const rounds: { proxy: Figures; direct: Figures; proxyCpuUs: number; atRate: { proxy: Figures; direct: Figures } }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (["proxy", "direct"] as const) : (["direct", "proxy"] as const);
      const measured: Partial<Record<"proxy" | "direct", Figures>> = {};
      const atRate: Partial<Record<"proxy" | "direct", Figures>> = {};
      let proxyCpuUs = 0;
      for (const variant of order) {
        if (variant === "proxy") {
          const before = await cpuMicros(h.proxy.host.name);
          const result = await proxied(DURATION_S);
          proxyCpuUs = (await cpuMicros(h.proxy.host.name)) - before;
          measured.proxy = figures(result);
          proxyCpuUs /= Math.max(1, result.requests.total);
        } else measured.direct = figures(await direct(DURATION_S));
      }
      for (const variant of order) atRate[variant] = figures(await (variant === "proxy" ? proxied(DURATION_S, RATE) : direct(DURATION_S, RATE)));
      rounds.push({ proxy: measured.proxy!, direct: measured.direct!, proxyCpuUs, atRate: { proxy: atRate.proxy!, direct: atRate.direct! } });
    }

    // Route changes under load.
    const load = proxied(Math.max(DURATION_S, Math.ceil((CHANGES * 1.5) + 2)));
    const changes: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (let i = 0; i < CHANGES; i++) {
      const mode = i % 2 === 0 ? "maintenance" : "serving";
      const want = mode === "maintenance" ? 503 : 200;
      const started = performance.now();
      await h.proxy.setMode(h.docker, other, mode, () => undefined);
      while ((await statusThroughProxy(proxyAddress, OTHER, root)) !== want) {
        if (performance.now() - started > 10_000) throw new Error(`route change ${i + 1} not visible after 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      changes.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const during = figures(await load);

    const proxyRps = median(rounds.map((r) => r.proxy.rps));
    const directRps = median(rounds.map((r) => r.direct.rps));
    const proxyP99 = median(rounds.map((r) => r.atRate.proxy.p99));
    const directP99 = median(rounds.map((r) => r.atRate.direct.p99));
    const cpuPerRequest = median(rounds.map((r) => r.proxyCpuUs));
    const ratio = proxyRps / directRps;
    const maxChange = Math.max(...changes);

    const row = (cells: (string | number)[]) => console.log(cells.map((c, i) => String(c).padStart(i === 0 ? 0 : 12)).join(""));
    console.log(`\nGET /web/health, ${CONNECTIONS} connections, ${DURATION_S} s per variant, ${ROUNDS} round(s)\n`);
    row(["round    ", "proxy rps", "direct rps", "ratio", "caddy cpu", `p99@${RATE}/s`, `direct p99`, "failed"]);
    rounds.forEach((r, i) =>
      row([
        `${i + 1}        `,
        r.proxy.rps.toFixed(0),
        r.direct.rps.toFixed(0),
        (r.proxy.rps / r.direct.rps).toFixed(3),
        `${r.proxyCpuUs.toFixed(0)} us/req`,
        `${r.atRate.proxy.p99} ms`,
        `${r.atRate.direct.p99} ms`,
        r.proxy.failed + r.direct.failed + r.atRate.proxy.failed + r.atRate.direct.failed,
      ]),
    );
    row(["median   ", proxyRps.toFixed(0), directRps.toFixed(0), ratio.toFixed(3), `${cpuPerRequest.toFixed(0)} us/req`, `${proxyP99} ms`, `${directP99} ms`, ""]);
    console.log(`\nroute changes under load: ${changes.length}, applied in ${changes.map((c) => c.toFixed(0)).join(", ")} ms (max ${maxChange.toFixed(0)} ms); failed requests during them: ${during.failed} of ${Math.round(during.rps * Math.max(DURATION_S, Math.ceil(CHANGES * 1.5 + 2)))}`);
    const goalThroughput = ratio >= GOAL_RATIO;
    const goalLatency = proxyP99 - directP99 <= GOAL_P99_DELTA_MS;
    console.log(`\nthroughput: as fast as ${CONNECTIONS} connections go; latency: at ${RATE} requests/s; Caddy's CPU per proxied HTTPS request from its cgroup`);
    const goalChanges = maxChange <= GOAL_CHANGE_MS && during.failed === 0;
    console.log(`goals: throughput >= ${GOAL_RATIO * 100} % ${goalThroughput ? "met" : "NOT met"}; p99 at ${RATE}/s <= direct + ${GOAL_P99_DELTA_MS} ms ${goalLatency ? "met" : "NOT met"}; route change <= ${GOAL_CHANGE_MS} ms with 0 failures ${goalChanges ? "met" : "NOT met"}\n`);
    console.log(
      JSON.stringify({
        proxy_rps: Math.round(proxyRps),
        direct_rps: Math.round(directRps),
        throughput_ratio: Number(ratio.toFixed(3)),
        proxy_cpu_us_per_request: Math.round(cpuPerRequest),
        proxy_saturated_p99_ms: median(rounds.map((r) => r.proxy.p99)),
        direct_saturated_p99_ms: median(rounds.map((r) => r.direct.p99)),
        fixed_rate_rps: RATE,
        proxy_p50_ms: median(rounds.map((r) => r.atRate.proxy.p50)),
        direct_p50_ms: median(rounds.map((r) => r.atRate.direct.p50)),
        proxy_p99_ms: proxyP99,
        direct_p99_ms: directP99,
        p99_delta_ms: proxyP99 - directP99,
        route_change_max_ms: Math.round(maxChange),
        route_change_median_ms: Math.round(median(changes)),
        route_changes: changes.length,
        failed_requests_during_changes: during.failed,
        goal_throughput_met: goalThroughput,
        goal_latency_met: goalLatency,
        goal_route_change_met: goalChanges,
        connections: CONNECTIONS,
        duration_s: DURATION_S,
        rounds: ROUNDS,
      }),
    );
  } finally {
    if (h !== null) await finishSuite(SUITE, h).catch((error: unknown) => console.error(String(error)));
    await world?.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
