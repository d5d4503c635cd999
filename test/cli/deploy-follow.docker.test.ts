// `berth deploy --follow` and friends against a real control plane and a real agent running
// Docker: a deployment followed to its end, through a TCP proxy whose connections are cut in
// the middle of the logs (every stored line printed exactly once); a failing deployment
// followed with an API key as NDJSON; `berth logs --follow`; rollback with an API key, retry
// and cancel.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import type { AgentProcess } from "../support/agent-process.ts";
import { spawn } from "node:child_process";
import { CLI_ENTRY, cliRunner } from "../support/cli.ts";
import type { TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { removeEnvironmentObjects, startShop, TEST_IMAGES } from "../support/real-agent.ts";
import { urlOf } from "../support/sse.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let admin: Person;
let envId: string;
let url: string;
let apiKey: string;
let proxy: TcpProxy;
const cli = cliRunner();

beforeAll(async () => {
  ({ cp, d, agent, envId } = await startShop("CLI shop"));
  admin = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  url = urlOf(cp);
  apiKey = (await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: "ci", createdBy: null })).key;
  proxy = await startTcpProxy(Number(new URL(url).port));
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await agent?.cleanup();
  await cp?.close();
  await removeEnvironmentObjects([envId]);
});

const asPerson = (base = url) => ({ BERTH_URL: base, BERTH_TOKEN: admin.token });
const asKey = () => ({ BERTH_URL: url, BERTH_API_KEY: apiKey });

interface StoredLog {
  id: string;
  timestamp: string;
  level: string;
  message: string;
  step: string | null;
}
async function storedLogs(id: string): Promise<StoredLog[]> {
  const res = await admin.api.get(`/deployments/${id}/logs?limit=500`);
  expect(res.status).toBe(200);
  return res.body.logs as StoredLog[];
}
/** A stored line as the CLI prints it when not on a terminal. */
const printed = (l: StoredLog) => `${l.timestamp.slice(11, 19)} ${l.level === "error" ? "ERROR " : l.level === "warning" ? "WARN " : ""}${l.message}`;
/** The lines of stdout that are log lines (not step lines, not the result). */
const logLinesOf = (stdout: string) => stdout.split("\n").filter((l) => /^\d\d:\d\d:\d\d /.test(l));

async function settled(id: string): Promise<{ status: string }> {
  let rec = { status: "pending" };
  await waitUntil(`deployment ${id} to end`, async () => {
    rec = (await admin.api.get(`/deployments/${id}`)).body;
    return ["success", "failed", "cancelled"].includes(rec.status);
  }, { timeoutMs: 240_000, intervalMs: 500, detail: () => agent.output.slice(-2000) });
  return rec;
}

let firstId = "";
let failedId = "";

it("deploy --follow through a connection cut in the middle of the logs: steps, every line once, exit 0", async () => {
  const run = cli.start(["deploy", envId, "--follow"], { env: asPerson(`http://127.0.0.1:${proxy.port}`) });
  run.child.stdin!.end();
  // Cut every connection (the event stream's too) once log lines flow, then let it reconnect.
  await waitUntil("the first log lines", () => logLinesOf(run.stdout()).length >= 2, { timeoutMs: 120_000, intervalMs: 50, detail: () => run.stderr() });
  proxy.cut();
  const printedAtCut = logLinesOf(run.stdout()).length;
  const deploymentId = async () => ((await admin.api.get(`/deployments?limit=1`)).body as { id: string }[])[0]!.id;
  // Lines are written while the CLI is cut off: the resumed stream must bring them.
  await waitUntil("lines written during the cut", async () => (await storedLogs(await deploymentId())).length > printedAtCut + 2, { timeoutMs: 60_000, intervalMs: 100 });
  proxy.restore();
  const r = await run.done;
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toContain("event stream interrupted");
  firstId = /Deployment ([0-9a-f-]{36}) started/.exec(r.stderr)![1]!;
  const stored = await storedLogs(firstId);
  expect(stored.length).toBeGreaterThan(5);
  // Every stored line, in order, exactly once: nothing lost in the cut, nothing printed twice.
  expect(logLinesOf(r.stdout)).toEqual(stored.map(printed));
  // The steps, as plain lines (not a terminal), with their names and positions.
  expect(r.stdout).toMatch(/==> step \d+\/\d+ /);
  expect(r.stdout).toContain("✓ Deployment");
  expect((await admin.api.get(`/deployments/${firstId}`)).body.status).toBe("success");
}, 300_000);

it("on a terminal the steps are one progress bar redrawn in place, not lines", async () => {
  // script(1) gives the CLI a pseudo-terminal; it follows the finished deployment of the first test.
  // Asynchronously: the control plane answering it runs in this process.
  const command = `${process.execPath} --import tsx ${CLI_ENTRY} logs ${firstId} --follow`;
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    env: { PATH: process.env.PATH ?? "", HOME: cli.configHome, XDG_CONFIG_HOME: cli.configHome, TERM: "xterm", ...asPerson() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => (output += c));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(code, output).toBe(0);
  expect(output).toContain("█");
  expect(output).toMatch(/100%/);
  expect(output).toContain("\r\x1b[2K");
  expect(output).not.toContain("==> ");
}, 90_000);

it("a failing deploy followed with an API key as NDJSON: step, log and result lines, the failed step and message, exit 1", async () => {
  await cp.app.services.images.set({ erp: { "17.0": "127.0.0.1:9/berth-test/missing:17.0" } });
  try {
    const r = await cli.run(["deploy", envId, "--follow", "--json"], { env: asKey(), timeoutMs: 240_000 });
    expect(r.code, r.stderr).toBe(1);
    const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { type: string; [k: string]: unknown });
    expect(events[0]!.type).toBe("started");
    const id = events[0]!.id as string;
    failedId = id;
    expect(events.some((e) => e.type === "step")).toBe(true);
    const logs = events.filter((e) => e.type === "log");
    const stored = await storedLogs(id);
    expect(logs.map((l) => l.id)).toEqual(stored.map((l) => l.id));
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: "result", outcome: "failed", status: "failed", deployment: { id, status: "failed" } });
    const error = (last.deployment as { error_message: string }).error_message;
    expect(error).toMatch(/could not be pulled/);
    const step = (last.deployment as { current_step: string }).current_step;
    // The failure is on stderr as JSON: the step it stopped at and the message.
    const failure = JSON.parse(r.stderr.trim().split("\n").at(-1)!) as { error: string; message: string };
    expect(failure.error).toBe("deployment_failed");
    expect(failure.message).toContain(`at step ${step}`);
    expect(failure.message).toContain(error);
  } finally {
    await cp.app.services.images.set(TEST_IMAGES);
  }
}, 300_000);

it("logs --follow prints the stored lines and the live ones of a deploy started with an API key, then exits 0", async () => {
  const started = await cli.run(["deploy", envId], { env: asKey() });
  expect(started.code, started.stderr).toBe(0);
  const id = started.stdout.trim();
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  const r = await cli.run(["logs", id, "--follow"], { env: asKey(), timeoutMs: 240_000 });
  expect(r.code, r.stderr).toBe(0);
  expect(logLinesOf(r.stdout)).toEqual((await storedLogs(id)).map(printed));
  // Without --follow: the stored lines; --limit keeps the last n.
  const tail = await cli.run(["logs", id, "--limit", "3"], { env: asPerson() });
  expect(tail.code).toBe(0);
  expect(logLinesOf(tail.stdout)).toEqual((await storedLogs(id)).slice(-3).map(printed));
  // A deployment that is not there (or not the caller's): the API's 404, exit 1.
  const missing = await cli.run(["logs", "00000000-0000-4000-8000-000000000000", "--follow"], { env: asKey() });
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("not_found");
}, 300_000);

it("rollback with an API key and retry with a session, followed to their end; cancel ends a followed deploy with exit 1, and is refused once it ended", async () => {
  // Rollback with a key: the public API's action answer (task_id), then the task followed to success.
  const rb = await cli.run(["rollback", firstId, "--follow", "--json"], { env: asKey(), timeoutMs: 240_000 });
  expect(rb.code, rb.stderr).toBe(0);
  const lines = rb.stdout.trim().split("\n").map((l) => JSON.parse(l) as { type: string; answer?: { task_id: string; poll_url: string }; deployment?: { status: string } });
  const taskId = lines[0]!.answer!.task_id;
  expect(lines[0]!.answer!.poll_url).toBe(`/api/public/v1/deployments/${taskId}`);
  expect((await admin.api.get(`/deployments/${taskId}`)).body).toMatchObject({ kind: "rollback", trigger: "rollback", extra_data: { rollback_to: firstId } });
  // The result is the public API's task (status completed, not the platform's success).
  expect(lines.at(-1)).toMatchObject({ type: "result", outcome: "succeeded", deployment: { id: taskId, status: "completed" } });
  // Retry of the deployment that failed (its image is back): a new deployment, followed to success.
  const retry = await cli.run(["retry", failedId, "--follow"], { env: asPerson(), timeoutMs: 240_000 });
  expect(retry.code, retry.stderr).toBe(0);
  expect(retry.stderr).toMatch(/Retry [0-9a-f-]{36} started/);

  const follow = cli.start(["deploy", envId, "--follow"], { env: asPerson() });
  follow.child.stdin!.end();
  await waitUntil("the deployment to start", () => /Deployment ([0-9a-f-]{36}) started/.test(follow.stderr()), { timeoutMs: 60_000, intervalMs: 50 });
  const id = /Deployment ([0-9a-f-]{36}) started/.exec(follow.stderr())![1]!;
  const cancel = await cli.run(["cancel", id], { env: asKey() });
  expect(cancel.code, cancel.stderr).toBe(0);
  const followed = await follow.done;
  expect(followed.code, followed.stdout).toBe(1);
  expect(followed.stderr).toMatch(new RegExp(`Deployment ${id} was cancelled`));
  expect((await settled(id)).status).toBe("cancelled");

  const again = await cli.run(["cancel", id], { env: asPerson() });
  expect(again.code).toBe(1);
  expect(again.stderr).toContain("not_cancellable");
}, 400_000);
