// An agent may only report on its own server's work. Organisation B enrols an agent for its
// own server and, through the real agent link, sends step events, log lines and a command
// result naming organisation A's deployment and command: they are acknowledged (B's journal
// moves on) but change nothing of A's: status, error message, image, logs, its command and
// its live stream stay as they were. B's events about its own deployment still apply, and
// A's own agent can still finish A's deployment afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPLOY_STEP_IDS, type Event, type SignedCommand } from "@berth/protocol";
import { useTestImages } from "../support/real-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { SseStream, urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let base: string;
const cleanup: (() => void)[] = [];

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  base = urlOf(cp);
  await useTestImages(cp);
}, 60_000);
afterAll(async () => {
  for (const c of cleanup) c();
  await cp?.close();
});

/** An organisation with a connected simulated agent enrolled for its own server. */
async function organisationWithAgent(onCommand: (cmd: SignedCommand, agent: SimAgent) => void) {
  const { d, agent, stop } = await demoOrganizationWithAgent(cp, base, onCommand);
  cleanup.push(stop);
  return { d, agent };
}

async function row(deploymentId: string) {
  const { rows } = await cp.database.pool.query(
    `select status, error_message, image_tag, container_id, git_commit, current_step, steps_completed, progress_percent, started_at, completed_at
     from deployments where id = $1`,
    [deploymentId],
  );
  return rows[0] as Record<string, unknown>;
}

async function logsOf(deploymentId: string): Promise<string[]> {
  const { rows } = await cp.database.pool.query<{ message: string }>("select message from deployment_logs where deployment_id = $1 order by id", [deploymentId]);
  return rows.map((r) => r.message);
}

async function poll<T>(read: () => Promise<T>, until: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await read();
    if (until(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("an agent naming another organisation's deployment and command", () => {
  it("is acknowledged but changes nothing of theirs; its own events still apply", async () => {
    // Organisation A: a deploy in progress, its command accepted by A's own agent.
    let commandA: SignedCommand | undefined;
    const a = await organisationWithAgent((cmd, agent) => {
      commandA = cmd;
      const deployment_id = (cmd.params as { deployment_id: string }).deployment_id;
      agent.sendEvents([
        agent.event({ kind: "step.started", command_id: cmd.command_id, deployment_id, step: "initializing" }),
        agent.event({ kind: "log", command_id: cmd.command_id, deployment_id, level: "info", message: "genuine A 1", step: "initializing" }),
      ]);
    });
    const ownerA = await addPerson(cp.app, "org_owner", { organizationId: a.d.organization_id });
    const streamA = await SseStream.open(base, { organization_id: a.d.organization_id }, { token: ownerA.token });
    cleanup.push(() => streamA.close());
    await streamA.until((s) => s.lastId !== null, "the opening id");

    const depA = (await publicClient(cp.app, a.d.api_keys.org_rw).post(`/environments/${a.d.environments.running}/deploy`)).body.task_id as string;
    await poll(() => logsOf(depA), (l) => l.includes("genuine A 1"), "A's first log line");
    await poll(() => row(depA), (r) => r.status === "deploying", "A's deployment to be deploying");
    expect(commandA).toBeDefined();
    const before = await row(depA);
    const logsBefore = await logsOf(depA);
    const { rows: envBefore } = await cp.database.pool.query("select status, container_id, container_name from environments where id = $1", [a.d.environments.running]);

    // Organisation B: its own agent, on its own server, running its own deploys to the end.
    const b = await organisationWithAgent((cmd, agent) => {
      const deployment_id = (cmd.params as { deployment_id: string }).deployment_id;
      const events: Event[] = [];
      for (const step of DEPLOY_STEP_IDS) {
        events.push(agent.event({ kind: "step.started", command_id: cmd.command_id, deployment_id, step }));
        events.push(agent.event({ kind: "log", command_id: cmd.command_id, deployment_id, level: "info", message: `genuine B ${step}`, step }));
        events.push(agent.event({ kind: "step.finished", command_id: cmd.command_id, deployment_id, step }));
      }
      events.push(agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { container_id: "b0b", container_name: "erp-b", image: "berth-test/erp:17.0", commit: "bbb1111" } }));
      agent.sendEvents(events);
    });
    expect(b.d.server_id).not.toBe(a.d.server_id);
    expect(b.d.organization_id).not.toBe(a.d.organization_id);

    // The attack: every kind of event that names a deployment or a command, with A's ids.
    const forged = (agent: SimAgent) => [
      agent.event({ kind: "step.started", command_id: commandA!.command_id, deployment_id: depA, step: "pulling_image" }),
      agent.event({ kind: "log", command_id: commandA!.command_id, deployment_id: depA, level: "error", message: "forged log line", step: "pulling_image" }),
      agent.event({ kind: "step.finished", command_id: commandA!.command_id, deployment_id: depA, step: "pulling_image" }),
      agent.event({ kind: "step.failed", command_id: commandA!.command_id, deployment_id: depA, step: "pulling_image", error: { code: "forged", message: "forged error message" } }),
      agent.event({
        kind: "command.result",
        command_id: commandA!.command_id,
        ok: true,
        result: { container_id: "evil", container_name: "evil", image: "evil/backdoor:latest", commit: "deadbeef" },
      }),
    ];
    await b.agent.sendAcked(forged(b.agent));
    // A failure forged after the success attempt, too.
    await b.agent.sendAcked([b.agent.event({ kind: "command.result", command_id: commandA!.command_id, ok: false, error: { code: "forged", message: "forged failure" } })]);

    // B's own deploy still goes through, events applied.
    const depB = (await publicClient(cp.app, b.d.api_keys.org_rw).post(`/environments/${b.d.environments.running}/deploy`)).body.task_id as string;
    const doneB = await poll(() => row(depB), (r) => r.status === "success", "B's own deployment to succeed");
    expect(doneB).toMatchObject({ image_tag: "berth-test/erp:17.0", container_id: "b0b", progress_percent: 100, steps_completed: DEPLOY_STEP_IDS.length });
    expect(await logsOf(depB)).toEqual(DEPLOY_STEP_IDS.map((s) => `genuine B ${s}`));

    // A's own agent speaks once more, so A's stream has something after the attack to wait for.
    await a.agent.sendAcked([a.agent.event({ kind: "log", command_id: commandA!.command_id, deployment_id: depA, level: "info", message: "genuine A 2", step: "initializing" })]);
    const logMessages = () => streamA.of("deployment.log").map((e) => e.data.message as string);
    await streamA.until(() => logMessages().includes("genuine A 2"), "A's own later log line");

    // Nothing of A's moved.
    expect(await row(depA)).toEqual(before);
    expect(await logsOf(depA)).toEqual([...logsBefore, "genuine A 2"]);
    const { rows: envAfter } = await cp.database.pool.query("select status, container_id, container_name from environments where id = $1", [a.d.environments.running]);
    expect(envAfter).toEqual(envBefore);
    const { rows: cmd } = await cp.database.pool.query("select state, result, error from agent_commands where command_id = $1", [commandA!.command_id]);
    expect(cmd).toEqual([{ state: "accepted", result: null, error: null }]);
    // The forged lines are stored nowhere, under no organisation, and A's stream never saw them.
    const { rows: anywhere } = await cp.database.pool.query("select count(*)::int as n from deployment_logs where message like 'forged%'", []);
    expect(anywhere[0].n).toBe(0);
    expect(logMessages().filter((m) => m.startsWith("forged"))).toEqual([]);
    expect(streamA.events.filter((e) => JSON.stringify(e.data).includes("forged") || JSON.stringify(e.data).includes("evil"))).toEqual([]);
    const api = publicClient(cp.app, a.d.api_keys.org_ro);
    const taskA = (await api.get(`/deployments/${depA}`)).body;
    expect(taskA).toMatchObject({ error_message: null });
    expect(JSON.stringify((await ownerA.api.get(`/deployments/${depA}/logs`)).body)).not.toMatch(/forged/);

    // A's own agent can still finish A's deployment with its command: the forgery ended nothing.
    await a.agent.sendAcked([
      a.agent.event({ kind: "command.result", command_id: commandA!.command_id, ok: true, result: { container_id: "a11", container_name: "erp-a", image: "berth-test/erp:17.0", commit: "aaa2222" } }),
    ]);
    expect(await row(depA)).toMatchObject({ status: "success", image_tag: "berth-test/erp:17.0", container_id: "a11", error_message: null });
  }, 60_000);
});
