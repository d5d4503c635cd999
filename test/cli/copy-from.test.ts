// `berth environments copy-from <env> --from <env> [--latest] --follow` against a real control
// plane whose server has a simulated agent on the real link, with an API key and signed in:
// it asks first (refused without a terminal unless --yes), starts one copy operation whose
// signed command the agent receives, and --follow shows it to its end (exit code 0); the
// API's refusals come back with their code and exit code 1. A copy its agent reports failed
// (and undone) fails the command and leaves the environment's status as it was.
import { expect, it } from "vitest";
import { stepsForKind, type Event, type SignedCommand } from "@berth/protocol";
import { cliSuite } from "../support/cli-suite.ts";
import { signedInPerson, withApiKey } from "../support/cli-people.ts";
import type { SimAgent } from "../support/sim-agent.ts";

const received: SignedCommand[] = [];
/** The next copy fails at neutralisation, as the agent reports a copy it undid. */
let failNext = false;

/** The agent runs a copy's steps and reports success, as the real restore handler does. */
function answer(cmd: SignedCommand, agent: SimAgent) {
  received.push(cmd);
  const p = cmd.params as { deployment_id: string; live_source?: unknown };
  if (cmd.type !== "restore" || p.live_source === undefined) return;
  const base = { command_id: cmd.command_id, deployment_id: p.deployment_id };
  const events: Event[] = [];
  const failing = failNext;
  failNext = false;
  for (const step of stepsForKind("copy")) {
    events.push(agent.event({ kind: "step.started", ...base, step }));
    if (failing && step === "initializing_database") {
      const error = { code: "neutralize_failed", message: 'the ERP\'s own "odoo neutralize" failed on the copy (exit code 1), so it is not served' };
      events.push(agent.event({ kind: "step.failed", ...base, step, error }));
      events.push(agent.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error }));
      setTimeout(() => agent.sendEvents(events), 200);
      return;
    }
    events.push(agent.event({ kind: "step.finished", ...base, step }));
  }
  events.push(agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { healthy: true, host_port: 1 } }));
  setTimeout(() => agent.sendEvents(events), 200);
}

const s = cliSuite(answer);

it("copies production into staging and follows the copy to its end, with either API; refusals keep their code", { timeout: 90_000 }, async () => {
  const production = s.d.environments.running;
  const staging = s.d.environments.stopped;
  for (const run of [withApiKey(s, s.d.api_keys.org_rw), await signedInPerson(s)]) {
    const unconfirmed = await run(["environments", "copy-from", staging, "--from", production]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain("pass --yes");

    const followed = await run(["environments", "copy-from", staging, "--from", production, "--yes", "--follow"]);
    expect(followed.code, followed.stderr).toBe(0);
    const id = /Copy ([0-9a-f-]{36}) started/.exec(followed.stderr + followed.stdout)?.[1];
    expect(id, followed.stderr + followed.stdout).toBeDefined();
    expect(followed.stdout + followed.stderr).toContain(`Deployment ${id} succeeded`);
    const command = received.find((c) => (c.params as { deployment_id?: string }).deployment_id === id);
    expect(command?.params).toMatchObject({ environment_id: staging, live_source: { environment_id: production } });

    const intoProduction = await run(["environments", "copy-from", production, "--from", staging, "--yes"]);
    expect(intoProduction.code).toBe(1);
    expect(intoProduction.stderr).toContain("(copy_into_production)");
    const noBackup = await run(["environments", "copy-from", staging, "--from", production, "--latest", "--yes"]);
    expect(noBackup.code).toBe(1);
    expect(noBackup.stderr).toContain("(copy_source_has_no_backup)");
  }
});

it("a copy that fails fails the command, and the environment keeps its status", { timeout: 60_000 }, async () => {
  const staging = s.d.environments.stopped;
  const statusOf = async () => (await s.cp.database.pool.query<{ status: string }>("select status from environments where id = $1", [staging])).rows[0]!.status;
  const before = await statusOf();
  failNext = true;
  const failed = await withApiKey(s, s.d.api_keys.org_rw)(["environments", "copy-from", staging, "--from", s.d.environments.running, "--yes", "--follow"]);
  expect(failed.code).not.toBe(0);
  expect(failed.stdout + failed.stderr).toContain("odoo neutralize");
  expect(await statusOf()).toBe(before);
});
