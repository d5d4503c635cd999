// The product path: a real control plane (buildApp on its own database, listening on
// 127.0.0.1) and the real agent process from source (test/support/agent-process.ts, as the
// e2e test runs it), linked over its WebSocket. A deploy is POST /environments/{id}/deploy
// over real HTTP, then GET /deployments/{task_id} every 100 ms until the task is completed.
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { createDb, runMigrations, type DbHandle } from "@berth/db";
import { buildApp, createDemoOrganization, type App } from "@berth/control-plane";
import { AgentProcess } from "../../support/agent-process.ts";
import type { BenchDatabase } from "../database.ts";
import type { Inside } from "./direct.ts";
import { cpuDelta, cpuSnapshot, parentOf } from "./proc.ts";

const PREFIX = "/api/public/v1";
export const POLL_MS = 100;
/** Read-only keys may make 120 requests per 60 s window: polling rotates over enough of them. */
const POLL_KEYS = 12;
const MASTER_KEY = Buffer.alloc(32, 0x3c);

export interface EnvironmentSpec {
  cpu_cores: number;
  ram_mb: number;
}

export interface StepTiming {
  step: string;
  /** step.started -> step.finished, by the agent's own timestamps. */
  ms: number;
}

export interface FullDeployResult {
  taskId: string;
  totalMs: number;
  status: string;
  steps: StepTiming[];
  /** Where the time outside the agent's steps went, from the database's timestamps. */
  gaps: { what: string; ms: number }[];
  /** The long steps split at the agent's log lines (NaN where a line is missing). */
  inside: Inside;
  polls: number;
  /** Events the agent journalled and sent for this deploy. */
  events: number;
  /** CPU ms during the timed part: agent, this process (control plane + poller), the control plane's PostgreSQL when local. */
  cpu: Record<string, number>;
}

export interface FullStack {
  url: string;
  serverId: string;
  agent: AgentProcess;
  /** The control plane's PostgreSQL postmaster, when it runs on this machine. */
  postmaster: number | null;
  /** Kills the agent and removes its state dir; once, however often it is called. */
  stopAgent(): Promise<void>;
  newEnvironment(name: string, spec: EnvironmentSpec): Promise<string>;
  deploy(environmentId: string, deadlineMs: number): Promise<FullDeployResult>;
}

export async function startFullStack(db: BenchDatabase, images: { erp: Record<string, string>; db: string }, onClose: (what: string, fn: () => Promise<unknown>) => void): Promise<FullStack> {
  await runMigrations(db.url);
  const database: DbHandle = createDb(db.url, { max: 10 });
  let app: App;
  try {
    app = await buildApp({ database, masterKey: MASTER_KEY });
  } catch (error) {
    await database.close();
    throw error;
  }
  onClose("close the control plane", async () => {
    await app.close();
    await database.close();
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await app.services.images.set(images);
  const demo = await createDemoOrganization(database.db, app.services, { name: "bench:deploy" });
  const org = demo.organization_id;
  const newKey = async (access: "read_only" | "full_access") =>
    (await app.services.apiKeys.create({ organizationId: org, projectId: null, access, name: `bench-deploy-${access}`, createdBy: null })).key;
  const pollKeys: string[] = [];
  for (let i = 0; i < POLL_KEYS; i++) pollKeys.push(await newKey("read_only"));
  let nextPollKey = 0;

  const call = async (key: string, method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(url + PREFIX + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const expect = (what: string, res: { status: number; body: unknown }, status: number) => {
    if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
  };

  // A project without git_repo_url: nothing is cloned, nothing outside this machine is reached.
  const setupKey = await newKey("full_access");
  const project = await call(setupKey, "POST", "/projects", { name: "bench deploy", server_id: demo.server_id, erp_version: "17.0" });
  expect("POST /projects", project, 201);
  const projectId = String(project.body.id);

  const token = await app.services.enrollment.newToken(org, demo.server_id, null);
  const agent = await AgentProcess.create();
  // Once only: AgentProcess.stop waits for an exit event that a second call after a SIGKILL never gets.
  let agentStopped: Promise<void> | undefined;
  const stopAgent = () => (agentStopped ??= agent.cleanup());
  onClose("stop the agent and remove its state dir", stopAgent);
  await agent.enroll(url, token.token);
  agent.start();
  const connectBy = Date.now() + 60_000;
  while (!app.gateway.isConnected(demo.server_id)) {
    if (agent.child?.exitCode !== null && agent.child?.exitCode !== undefined) throw new Error(`the agent exited (${agent.child.exitCode}):\n${agent.output.slice(-3000)}`);
    if (Date.now() > connectBy) throw new Error(`the agent did not connect within 60 s:\n${agent.output.slice(-3000)}`);
    await sleep(100);
  }

  const postmaster = db.local
    ? await parentOf((await database.pool.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid)
    : null;
  const cpuTargets = {
    agent: { pid: agent.child!.pid! },
    bench_process: { pid: process.pid },
    ...(postmaster === null ? {} : { control_plane_postgres: { pid: postmaster, withChildren: true } }),
  };

  async function stepTimings(taskId: string, postedAt: number, polledAt: number): Promise<{ steps: StepTiming[]; gaps: { what: string; ms: number }[]; inside: Inside; events: number }> {
    // command.result carries the command's id only, not the deployment's.
    const { rows: all } = await database.pool.query<{ kind: string; step: string | null; message: string | null; ts: Date; received_at: Date }>(
      `select e.kind, e.body->>'step' as step, e.body->>'message' as message, e.ts, e.received_at from agent_events e
       join agent_commands c on c.command_id = e.command_id and c.server_id = e.server_id
       where c.deployment_id = $1 and e.kind in ('step.started', 'step.finished', 'step.failed', 'command.result', 'log') order by e.seq`,
      [taskId],
    );
    // The deployment's log lines are kept in deployment_logs (event-ingest.ts), not agent_events.
    const { rows: logs } = await database.pool.query<{ kind: string; step: string | null; message: string | null; ts: Date; received_at: Date }>(
      "select 'log' as kind, step, message, ts, ts as received_at from deployment_logs where deployment_id = $1 order by ts, id",
      [taskId],
    );
    all.push(...logs);
    const rows = all.filter((r) => r.kind !== "log");
    const at = (kind: string, step: string, message?: RegExp) =>
      all.find((r) => r.kind === kind && r.step === step && (message === undefined || message.test(r.message ?? "")))?.ts.getTime() ?? NaN;
    const attempts = /attempt (\d+)/.exec(all.find((r) => r.kind === "log" && r.step === "health_check" && /answered 200/.test(r.message ?? ""))?.message ?? "");
    const inside: Inside = {
      pg_create_ms: at("log", "creating_postgres", /^Created PostgreSQL container/) - at("log", "creating_postgres", /is present locally$/),
      pg_start_ms: at("log", "creating_postgres", /^Started PostgreSQL container/) - at("log", "creating_postgres", /^Created PostgreSQL container/),
      pg_ready_ms: at("step.finished", "creating_postgres") - at("log", "creating_postgres", /^Started PostgreSQL container/),
      erp_create_ms: at("log", "starting_container", /^Created ERP container/) - at("step.started", "starting_container"),
      erp_start_ms: at("step.finished", "starting_container") - at("log", "starting_container", /^Created ERP container/),
      health_attempts: attempts ? Number(attempts[1]) : NaN,
    };
    const started = new Map<string, number>();
    const steps: StepTiming[] = [];
    for (const r of rows) {
      if (r.kind === "step.started" && r.step) started.set(r.step, r.ts.getTime());
      if ((r.kind === "step.finished" || r.kind === "step.failed") && r.step) {
        const from = started.get(r.step);
        if (from !== undefined) steps.push({ step: r.step, ms: r.ts.getTime() - from });
      }
    }
    const cmd = (
      await database.pool.query<{ created_at: Date; sent_at: Date | null; accepted_at: Date | null; completed_at: Date | null }>(
        "select created_at, sent_at, accepted_at, completed_at from agent_commands where deployment_id = $1",
        [taskId],
      )
    ).rows[0];
    const firstStart = rows.find((r) => r.kind === "step.started");
    const lastFinish = [...rows].reverse().find((r) => r.kind === "step.finished");
    const result = rows.find((r) => r.kind === "command.result");
    const gaps: { what: string; ms: number }[] = [];
    const gap = (what: string, from: number | undefined, to: number | undefined) => {
      if (from !== undefined && to !== undefined) gaps.push({ what, ms: to - from });
    };
    const t = (d: Date | null | undefined) => (d ? d.getTime() : undefined);
    const stepsMs = steps.reduce((a, x) => a + x.ms, 0);
    gap("POST sent -> command issued (API, task row, dispatch)", postedAt, t(cmd?.created_at));
    gap("command issued -> sent on the WebSocket (sign, insert, NOTIFY)", t(cmd?.created_at), t(cmd?.sent_at));
    gap("command sent -> first step.started (agent: verify, journal, lock)", t(cmd?.sent_at), t(firstStart?.ts));
    gap("between steps (step.finished -> next step.started), in all", 0, firstStart && lastFinish ? lastFinish.ts.getTime() - firstStart.ts.getTime() - stepsMs : undefined);
    gap("last step.finished -> command.result (agent)", t(lastFinish?.ts), t(result?.ts));
    gap("command.result -> stored by the control plane", t(result?.ts), t(result?.received_at));
    gap("result stored -> task seen completed by the 100 ms poll", t(result?.received_at), polledAt);
    gap("= all of the full deploy outside the agent's 17 steps", 0, polledAt - postedAt - stepsMs);
    const delivery = rows.map((r) => r.received_at.getTime() - r.ts.getTime()).sort((a, b) => a - b);
    if (delivery.length > 0) gaps.push({ what: "(step events: agent ts -> stored by the control plane, worst)", ms: delivery[delivery.length - 1]! });
    return { steps, gaps, inside, events: all.length };
  }

  return {
    url,
    serverId: demo.server_id,
    agent,
    postmaster,
    stopAgent,
    async newEnvironment(name, spec) {
      const env = await call(await newKey("full_access"), "POST", "/environments", { project_id: projectId, name, ...spec });
      expect("POST /environments", env, 201);
      return String(env.body.id);
    },
    async deploy(environmentId, deadlineMs) {
      const key = await newKey("full_access");
      const cpuBefore = await cpuSnapshot(cpuTargets);
      const postedAt = Date.now();
      const t0 = performance.now();
      const res = await call(key, "POST", `/environments/${environmentId}/deploy`);
      expect("POST /environments/{id}/deploy", res, 202);
      const taskId = String(res.body.task_id);
      let status = "queued";
      let polls = 0;
      let task: Record<string, unknown> = {};
      while (true) {
        const pollKey = pollKeys[nextPollKey++ % pollKeys.length]!;
        const got = await call(pollKey, "GET", `/deployments/${taskId}`);
        polls += 1;
        expect("GET /deployments/{id}", got, 200);
        task = got.body;
        status = String(task.status);
        if (["completed", "failed", "cancelled"].includes(status)) break;
        if (performance.now() - t0 > deadlineMs) throw new Error(`the deploy did not finish within ${deadlineMs / 1000} s (status ${status}):\n${agent.output.slice(-3000)}`);
        await sleep(POLL_MS);
      }
      const totalMs = performance.now() - t0;
      const polledAt = Date.now();
      const cpu = cpuDelta(cpuBefore, await cpuSnapshot(cpuTargets));
      if (status !== "completed") throw new Error(`the deploy ended ${status}: ${JSON.stringify(task)}\n${agent.output.slice(-3000)}`);
      const { steps, gaps, inside, events } = await stepTimings(taskId, postedAt, polledAt);
      return { taskId, totalMs, status, steps, gaps, inside, polls, events, cpu };
    },
  };
}
