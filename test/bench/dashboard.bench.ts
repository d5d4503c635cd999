// `npm run bench:dashboard`: does the capacity view stay responsive with many servers?
// One control plane (in this process) on its own database, BENCH_SERVERS (500) simulated
// agents speaking the real protocol over WebSockets (each pings and sends a stats sample
// every BENCH_STATS_MS, 10 s like the real agent), an hour of history per server, and
// headless Chromium showing the servers page to an organisation owner.
//
// Measured:
// - page load: navigation start to every server's card rendered (BENCH_LOADS fresh loads, median);
// - update latency: an agent sends a stats sample with a unique figure -> that figure is in
//   its card (a MutationObserver in the page notes the time; same machine clock), BENCH_PROBES times
//   while the whole fleet keeps reporting;
// - long tasks (> 50 ms on the page's main thread) during BENCH_STEADY_S of that load.
// The last line printed is one JSON object of the figures.
import { randomUUID } from "node:crypto";
import { createDb, runMigrations } from "@berth/db";
import { buildApp } from "@berth/control-plane";
import { exportPublicKey, type Event } from "@berth/protocol";
import { SimAgent } from "../support/sim-agent.ts";
import { launchBrowser } from "../dashboard/browser.ts";
import { startBenchDatabase } from "./database.ts";
import { BENCH_AGENT_LIMITS, setting } from "./settings.ts";


const N = Math.floor(setting("BENCH_SERVERS", 500));
const STATS_MS = setting("BENCH_STATS_MS", 10_000);
const LOADS = Math.floor(setting("BENCH_LOADS", 3));
const PROBES = Math.floor(setting("BENCH_PROBES", 60));
const STEADY_S = setting("BENCH_STEADY_S", 10);
const PASSWORD = "dashboard bench password";
const log = (msg: string) => process.stderr.write(`[dashboard] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const median = (xs: number[]) => percentile(xs, 50);
function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
const round = (n: number) => Math.round(n);

const db = await startBenchDatabase();
log(`database: ${db.description}`);
await runMigrations(db.url);
const database = createDb(db.url, { max: 20 });
// BENCH_SERVERS agents connect from one address at once.
const app = await buildApp({ database, masterKey: Buffer.alloc(32, 0x44), heartbeatMs: 15_000, agentLimits: BENCH_AGENT_LIMITS });
await app.listen({ port: 0, host: "127.0.0.1" });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const agents: SimAgent[] = [];
const timers: NodeJS.Timeout[] = [];
let browser: Awaited<ReturnType<typeof launchBrowser>> | null = null;

try {
  // ---- seed: an organisation, its owner, N servers with the agents' keys, environments, history
  const pool = database.pool;
  const { rows: orgRows } = await pool.query<{ id: string }>("insert into organizations (name, plan) values ('Dashboard bench', 'pro') returning id");
  const orgId = orgRows[0]!.id;
  const email = `owner-${randomUUID().slice(0, 8)}@bench.test`;
  const user = await app.services.sessions.createUser({ email, name: "Bench owner", password: PASSWORD, isPortalAdmin: false });
  await app.services.memberships.addToOrganization(orgId, user.id, "owner");
  const login = await app.inject({ method: "POST", url: "/api/v1/auth/login", payload: { email, password: PASSWORD } });
  const token = (JSON.parse(login.body) as { token: string }).token;

  const signingKeys = await app.services.signer.pinnedKeys();
  const ids: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < N; i++) {
    const agent = new SimAgent({ baseUrl: base, token: "seeded" });
    const id = randomUUID();
    agent.identity = { server_id: id, signing_keys: signingKeys, connect_path: "/agent/v1/connect" };
    agents.push(agent);
    ids.push(id);
    keys.push(exportPublicKey(agent.keys.publicKey));
  }
  await pool.query(
    `insert into servers (id, organization_id, name, provider, hostname, cpu_cores, ram_mb, disk_gb, status, agent_public_key, agent_version, os, arch, docker_version, enrolled_at)
     select id, $1, 'srv-' || lpad(ord::text, 4, '0'), 'self-hosted', 'srv-' || ord || '.bench', 8, 32768, 500, 'offline', key, 'sim-1.0.0', 'Debian 12', 'x64', '28.2.2', now()
     from unnest($2::uuid[], $3::text[]) with ordinality as t(id, key, ord)`,
    [orgId, ids, keys],
  );
  const project = await app.services.projects.create({ organizationId: orgId, projectId: null }, { name: "Bench shop", erp_version: "17.0", server_id: ids[0]! });
  await pool.query(
    `insert into environments (organization_id, project_id, server_id, name, git_branch, status, cpu_cores, ram_mb, disk_gb)
     select $1, $2, ($3::uuid[])[1 + (g % $4)], 'env-' || g, 'main', 'running', 1 + (g % 3), 2048 * (1 + g % 2), 20
     from generate_series(1, $5::int) g`,
    [orgId, project.id, ids, N, Math.round(N * 0.8)],
  );
  // An hour of figures per server, one a minute, for the history the page fetches.
  await pool.query(
    `insert into org_events (organization_id, type, data, created_at)
     select $1, 'server.stats', jsonb_build_object('server_id', s, 'ts', to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
       'cpu_percent', round((random() * 90)::numeric, 1), 'ram_used_mb', 8000 + (random() * 16000)::int, 'ram_total_mb', 32768,
       'disk_used_gb', 100 + random() * 200, 'disk_total_gb', 500, 'load1', random() * 4, 'load5', 1, 'load15', 1,
       'containers_running', 3, 'containers_total', 4), t
     from unnest($2::uuid[]) s, generate_series(now() - interval '59 minutes', now(), interval '1 minute') t`,
    [orgId, ids],
  );
  log(`seeded ${N} servers, ${Math.round(N * 0.8)} environments, 60 min of history each`);

  // ---- the fleet: connect, then ping and report on a staggered schedule ------------------
  const connectStart = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < agents.length) await agents[next++]!.connect();
    }),
  );
  log(`${N} agents connected in ${round(performance.now() - connectStart)} ms`);

  const sample = (agent: SimAgent, cpu: number): Event =>
    ({
      seq: agent.nextSeq++,
      ts: new Date().toISOString(),
      kind: "stats",
      cpu_percent: cpu,
      ram_used_mb: 8000 + Math.round(Math.random() * 16_000),
      ram_total_mb: 32_768,
      disk_used_gb: 100 + Math.random() * 200,
      disk_total_gb: 500,
      load1: Math.random() * 4,
      load5: 1,
      load15: 1,
      containers_running: 3,
      containers_total: 4,
    }) as Event;
  // While an agent is probed its regular samples wait: the page rightly shows only the newest
  // figure of a frame, so a regular sample right behind a probe would hide the probe.
  const probing = new Set<SimAgent>();
  const background = (agent: SimAgent) => {
    if (!probing.has(agent)) agent.sendEvents([sample(agent, Math.round(Math.random() * 900) / 10)]);
  };
  for (const [i, agent] of agents.entries()) {
    const offset = (i / N) * STATS_MS;
    timers.push(
      setTimeout(() => {
        background(agent);
        timers.push(setInterval(() => background(agent), STATS_MS));
        timers.push(setInterval(() => agent.ping(), 10_000));
      }, offset),
    );
  }
  await sleep(Math.min(STATS_MS, 12_000) + 1000);
  const { rows: online } = await pool.query<{ n: number }>("select count(*)::int as n from agent_sessions");
  log(`${online[0]!.n} agents hold a live link; ${(N / STATS_MS) * 1000} stats samples per second`);

  // ---- API time for the capacity list ------------------------------------------------------
  const apiTimes: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/api/v1/organizations/${orgId}/servers`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    apiTimes.push(performance.now() - t0);
  }

  // ---- page load --------------------------------------------------------------------------
  browser = await launchBrowser();
  const newPage = async () => {
    const context = await browser!.newContext({ viewport: { width: 1366, height: 860 } });
    await context.addInitScript(
      ([t, o]) => {
        sessionStorage.setItem("berth.session", t);
        sessionStorage.setItem("berth.org", o);
      },
      [token, orgId] as const,
    );
    return context.newPage();
  };
  const loads: number[] = [];
  let page = await newPage();
  for (let i = 0; i < LOADS; i++) {
    if (i > 0) {
      await page.context().close();
      page = await newPage();
    }
    await page.goto(`${base}/#/servers`, { waitUntil: "commit" });
    const handle = await page.waitForFunction((n) => (document.querySelectorAll("li.server-card").length >= n ? performance.now() : false), N, { polling: "raf", timeout: 60_000 });
    loads.push((await handle.jsonValue()) as number);
    const marks = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, Math.round(m.startTime)])));
    log(`load ${i + 1}: ${JSON.stringify(marks)} painted ${round(loads[loads.length - 1]!)}`);
  }
  log(`page loads: ${loads.map(round).join(", ")} ms`);
  await page.waitForFunction(() => document.getElementById("live-state")?.textContent === "Live", undefined, { timeout: 10_000 });

  // ---- long tasks during steady load ----------------------------------------------------------
  await page.evaluate(() => {
    const w = window as unknown as { longTasks: number[] };
    w.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.longTasks.push(e.duration);
    }).observe({ type: "longtask", buffered: false });
  });
  await sleep(STEADY_S * 1000);
  const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);

  // ---- update latency -----------------------------------------------------------------------
  const latencies: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const k = Math.floor(Math.random() * N);
    const agent = agents[k]!;
    probing.add(agent);
    await sleep(300); // a regular sample already on its way lands first
    // A figure the card does not show now (an unchanged text is not written, so never observed).
    const shown = await page.evaluate((id) => document.querySelector(`li.server-card[data-server-id="${id}"] .metric-cpu`)?.textContent ?? "", ids[k]!);
    let cpu = Math.round(Math.random() * 900) / 10;
    while (`${cpu.toFixed(1)} %` === shown) cpu = Math.round(Math.random() * 900) / 10;
    const expected = `${cpu.toFixed(1)} %`;
    const waiter = page.evaluate(
      ([id, text]) =>
        new Promise<number>((resolve, reject) => {
          const el = document.querySelector(`li.server-card[data-server-id="${id}"] .metric-cpu`);
          if (!el) return reject(new Error(`no card for ${id}`));
          const obs = new MutationObserver(() => {
            if (el.textContent === text) {
              obs.disconnect();
              resolve(Date.now());
            }
          });
          obs.observe(el, { childList: true, characterData: true, subtree: true });
          setTimeout(() => reject(new Error(`update not shown within 10 s (card still on the page: ${el.isConnected}, stream: ${document.getElementById("live-state")?.textContent}, shows ${el.textContent})`)), 10_000);
        }),
      [ids[k]!, expected] as const,
    );
    await sleep(20); // the observer is in place
    const sent = Date.now();
    agent.sendEvents([sample(agent, cpu)]);
    try {
      latencies.push((await waiter.catch((err: Error) => Promise.reject(new Error(`probe ${i + 1} of ${PROBES}: ${err.message}`)))) - sent);
    } finally {
      probing.delete(agent);
    }
    await sleep(50);
  }

  const figures = {
    servers: N,
    stats_per_s: (N / STATS_MS) * 1000,
    api_servers_ms: round(median(apiTimes)),
    page_load_ms: round(median(loads)),
    page_load_max_ms: round(Math.max(...loads)),
    update_p50_ms: round(percentile(latencies, 50)),
    update_p95_ms: round(percentile(latencies, 95)),
    update_max_ms: round(Math.max(...latencies)),
    long_tasks_per_s: Math.round((longTasks.length / STEADY_S) * 100) / 100,
    long_task_max_ms: round(longTasks.length ? Math.max(...longTasks) : 0),
  };
  const rows: [string, string][] = [
    ["servers (simulated agents)", `${figures.servers}`],
    ["stats samples per second (whole fleet)", `${figures.stats_per_s}`],
    ["GET …/servers (capacity list), median", `${figures.api_servers_ms} ms`],
    [`page load to ${N} cards, median of ${LOADS}`, `${figures.page_load_ms} ms (max ${figures.page_load_max_ms} ms)`],
    [`update latency, agent -> figure shown (${PROBES} probes)`, `p50 ${figures.update_p50_ms} ms, p95 ${figures.update_p95_ms} ms, max ${figures.update_max_ms} ms`],
    [`long tasks (> 50 ms) over ${STEADY_S} s of live updates`, `${longTasks.length} (max ${figures.long_task_max_ms} ms)`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log(`\nDashboard capacity view, ${N} servers\n`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  console.log("");
  console.log(JSON.stringify(figures));
} finally {
  for (const t of timers) clearTimeout(t);
  await browser?.close().catch(() => {});
  for (const a of agents) a.socket?.terminate();
  await app.close().catch(() => {});
  await database.close().catch(() => {});
  await db.stop();
}
