// GET /metrics after real traffic: API calls, a connected simulated agent sending host
// figures and taking a command, an open event stream. Parsed with a Prometheus text-format
// parser, not by string matching.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import { addPerson } from "../support/people.ts";
import { publicClient } from "../support/http.ts";
import { SseStream, urlOf } from "../support/sse.ts";
import { waitFor } from "../support/wait.ts";

const TOKEN = "metrics-token-0123456789";
let cp: TestControlPlane;
let closed: TestControlPlane;
let org: Awaited<ReturnType<typeof demoOrganizationWithAgent>>;
let stream: SseStream | undefined;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, metrics: { enabled: true, token: TOKEN } });
  closed = await startControlPlane({ metrics: { enabled: false, token: null } });
  org = await demoOrganizationWithAgent(cp, urlOf(cp));
});
afterAll(async () => {
  stream?.close();
  org?.stop();
  await cp?.close();
  await closed?.close();
});

async function scrape() {
  const res = await cp.app.inject({ url: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.statusCode).toBe(200);
  expect(res.headers["content-type"]).toContain("text/plain");
  const families = parsePrometheusTextFormat(res.body);
  const family = (name: string) => {
    const f = families.find((x) => x.name === name);
    if (!f) throw new Error(`no ${name} in the scrape`);
    return f;
  };
  const sample = (name: string, labels: Record<string, string> = {}) =>
    family(name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return { families, family, sample, text: res.body };
}

const requestCount = (s: Awaited<ReturnType<typeof scrape>>, route: string, status: string) =>
  Number(s.sample("berth_http_requests_total", { method: "GET", route, status_code: status })?.value ?? 0);

describe("/metrics", () => {
  it("is off unless turned on, and needs the token when one is set", async () => {
    expect((await closed.app.inject({ url: "/metrics" })).statusCode).toBe(404);
    const anonymous = await cp.app.inject({ url: "/metrics" });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toMatchObject({ error: "authentication_required", request_id: anonymous.headers["x-request-id"] });
    expect((await cp.app.inject({ url: "/metrics", headers: { authorization: "Bearer wrong-token-0123456789" } })).statusCode).toBe(401);
  });

  it("counts requests by route pattern and status, never by raw URL", async () => {
    const before = await scrape();
    const client = publicClient(cp.app, org.d.api_keys.org_ro);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) expect((await client.get(`/servers/${id}`)).status).toBe(404);
    expect((await client.get(`/servers/${org.d.server_id}`)).status).toBe(200);
    const after = await scrape();
    expect(requestCount(after, "/api/public/v1/servers/:id", "404") - requestCount(before, "/api/public/v1/servers/:id", "404")).toBe(3);
    expect(requestCount(after, "/api/public/v1/servers/:id", "200") - requestCount(before, "/api/public/v1/servers/:id", "200")).toBe(1);
    for (const id of [...ids, org.d.server_id]) expect(after.text).not.toContain(id.slice(0, 8) + "-");
    // The durations: the parser folds a labelled histogram's series into one sample (its
    // known limit), so the histogram's own lines are checked as text: same count, some time.
    expect(after.family("berth_http_request_duration_seconds").type).toBe("HISTOGRAM");
    const series = 'method="GET",route="/api/public/v1/servers/:id",status_code="404"';
    const line = (suffix: string, s = after) => Number(s.text.split("\n").find((l) => l.startsWith(`berth_http_request_duration_seconds_${suffix}{${series}}`))?.split(" ")[1] ?? 0);
    expect(line("count") - line("count", before)).toBe(3);
    expect(line("sum")).toBeGreaterThan(line("sum", before));
    await cp.app.inject({ url: `/no/such/${ids[0]}` });
    expect(requestCount(await scrape(), "unmatched", "404")).toBeGreaterThanOrEqual(1);
  });

  it("shows the connected agent, its host figures, the events it sent and the command it took", async () => {
    const { agent } = org;
    const before = await scrape();
    expect(Number(before.sample("berth_agents_connected")!.value)).toBe(1);
    const ingestedBefore = Number(before.sample("berth_events_ingested_total", { kind: "stats" })?.value ?? 0);

    await agent.sendAcked([
      agent.event({ kind: "stats", cpu_percent: 37.5, ram_used_mb: 2048, ram_total_mb: 8192, disk_used_gb: 10, disk_total_gb: 100, load1: 0.5, load5: 0.4, load15: 0.3, containers_running: 3, containers_total: 4 }),
    ]);
    const row = await cp.app.services.agentCommands.issue({ organizationId: org.d.organization_id, serverId: org.d.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
    await waitFor(async () => (await cp.database.pool.query("select state from agent_commands where command_id = $1", [row.commandId])).rows[0]?.state !== "pending");

    const after = await scrape();
    const server = { server_id: org.d.server_id };
    expect(Number(after.sample("berth_server_cpu_percent", server)!.value)).toBe(37.5);
    expect(Number(after.sample("berth_server_memory_used_bytes", server)!.value)).toBe(2048 * 1024 * 1024);
    expect(Number(after.sample("berth_server_disk_total_bytes", server)!.value)).toBe(100 * 1024 ** 3);
    expect(Number(after.sample("berth_server_containers_running", server)!.value)).toBe(3);
    expect(Number(after.sample("berth_events_ingested_total", { kind: "stats" })!.value) - ingestedBefore).toBe(1);
    const lag = after.sample("berth_event_ingest_lag_seconds")!;
    expect(Number(lag.count)).toBeGreaterThanOrEqual(1);
    expect(Number(lag.sum)).toBeLessThan(60 * Number(lag.count));
    const dispatch = after.sample("berth_command_dispatch_seconds")!;
    expect(Number(dispatch.count)).toBe(1);
    expect(Number(dispatch.sum)).toBeGreaterThanOrEqual(0);
    expect(Number(dispatch.sum)).toBeLessThan(30);

    // Once the agent leaves, its series go: only servers connected here are exported.
    agent.close();
    await waitFor(async () => !cp.app.gateway.isConnected(org.d.server_id));
    const gone = await scrape();
    expect(Number(gone.sample("berth_agents_connected")!.value)).toBe(0);
    expect(gone.sample("berth_server_cpu_percent", server)).toBeUndefined();
  });

  it("shows event-stream subscribers, the database pool and the job queues", async () => {
    const owner = await addPerson(cp.app, "org_owner", { organizationId: org.d.organization_id });
    const idle = await scrape();
    expect(Number(idle.sample("berth_sse_subscribers")!.value)).toBe(0);
    stream = await SseStream.open(urlOf(cp), { organization_id: org.d.organization_id }, { token: owner.token });
    expect(stream.status).toBe(200);
    const s = await scrape();
    expect(Number(s.sample("berth_sse_subscribers")!.value)).toBe(1);

    const total = Number(s.sample("berth_db_pool_connections", { state: "total" })!.value);
    const poolIdle = Number(s.sample("berth_db_pool_connections", { state: "idle" })!.value);
    expect(total).toBeGreaterThanOrEqual(1);
    expect(poolIdle).toBeLessThanOrEqual(total);
    expect(Number(s.sample("berth_db_pool_connections", { state: "waiting" })!.value)).toBeGreaterThanOrEqual(0);

    const depth = s.sample("berth_job_queue_depth", { queue: "deployments.stuck-sweep" });
    expect(Number(depth!.value)).toBeGreaterThanOrEqual(0);
    expect(s.sample("berth_job_queue_depth", { queue: "deployments.stuck-sweep.dead" })).toBeDefined();
    expect(s.family("berth_job_failures_total").type).toBe("COUNTER");
    expect(s.family("berth_process_resident_memory_bytes").type).toBe("GAUGE");
  });

  it("shows when the retention job last ran, and what it dropped and deleted", async () => {
    // It runs once at start (and hourly): its figures appear once that run has finished.
    await waitFor(async () => Number((await scrape()).sample("berth_retention_last_run_timestamp_seconds")?.value ?? 0) > 0, 30_000, 250);
    const s = await scrape();
    const at = Number(s.sample("berth_retention_last_run_timestamp_seconds")!.value);
    expect(Math.abs(at - cp.clock.now().getTime() / 1000)).toBeLessThan(600);
    expect(s.family("berth_retention_partitions_dropped_total").type).toBe("COUNTER");
    expect(s.family("berth_retention_rows_deleted_total").type).toBe("COUNTER");
    // A run that drops a month counts it by table.
    cp.app.metrics.observe.retentionRan({ dropped: ["deployment_logs_p202601", "agent_events_p202601", "agent_events_p202602"], deleted: 5 }, cp.clock.now());
    const after = await scrape();
    expect(Number(after.sample("berth_retention_partitions_dropped_total", { table: "agent_events" })!.value)).toBe(2);
    expect(Number(after.sample("berth_retention_partitions_dropped_total", { table: "deployment_logs" })!.value)).toBe(1);
    expect(Number(after.sample("berth_retention_rows_deleted_total")!.value)).toBe(5);
  });

  it("the Grafana dashboard in installers/grafana queries only metrics the control plane exports", async () => {
    const dashboard = readFileSync(new URL("../../installers/grafana/berth-control-plane.json", import.meta.url), "utf8");
    const exprs = (JSON.parse(dashboard) as { panels: { targets?: { expr: string }[] }[] }).panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const queried = new Set(exprs.flatMap((e) => e.match(/berth_[a-z0-9_]+/g) ?? []).map((name) => name.replace(/_(bucket|count|sum)$/, "")));
    expect(queried.size).toBeGreaterThanOrEqual(15);
    const exported = new Set((await scrape()).families.map((f) => f.name));
    expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
  });
});
