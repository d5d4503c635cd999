// Signed commands end to end through the link: verification, the journal's once-only rule,
// handlers, cancel, and what a restart leaves behind. Diagnostics runs against the real engine.
import { describe, expect, it } from "vitest";
import { MAX_MESSAGE_LENGTH, generateKeyPair, keyIdFor, signCommand, type Event } from "@berth/protocol";
import { signRaw, signedCommand, useAgentHarness } from "../../agent/agent.test-helpers.ts";
import { eventually, framesOf, sendCommand, type FakeControlPlane } from "../../link/fake-control-plane.test-helpers.ts";
import { systemClock } from "../../clock.ts";
import type { Journal } from "../../journal/journal-types.ts";
import { createRegistry } from "../registry.ts";
import { CommandError, type HandlerRegistry } from "./handler-types.ts";

const resultsFor = (cp: FakeControlPlane, commandId: string) =>
  [...cp.stored.values()].filter(
    (e): e is Extract<Event, { kind: "command.result" }> => e.kind === "command.result" && e.command_id === commandId,
  );

describe("commands", () => {
  const harness = useAgentHarness();

  async function setup(makeRegistry?: (journal: Journal) => HandlerRegistry) {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    const agent = harness.agent(cp, identity, journal, makeRegistry === undefined ? {} : { registry: makeRegistry(journal) });
    const connection = await cp.readyConnection(0);
    return { cp, identity, journal, agent, connection };
  }

  /** A registry whose diagnostics records each run before doing the real work. */
  const countingRegistry = (runs: string[]) => (journal: Journal): HandlerRegistry => {
    const real = createRegistry({ journal, stateDir: harness.dir(), startedAt: new Date(), clock: systemClock });
    return {
      diagnostics: async (params, ctx) => {
        runs.push(ctx.commandId);
        return real.diagnostics?.(params, ctx) ?? {};
      },
    };
  };

  it("runs a signed diagnostics command: accepted first, then a result with the engine's real figures", async () => {
    const { cp, identity, connection } = await setup();
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);

    await eventually(() => resultsFor(cp, command.command_id).length === 1, "the result", 25_000);
    const accepted = framesOf(connection, "command.accepted");
    expect(accepted.map((f) => f.payload)).toEqual([{ command_id: command.command_id, seq: command.seq }]);
    const acceptedAt = connection.frames.indexOf(accepted[0]!);
    const resultFrameAt = connection.frames.findIndex(
      (f) => f.type === "events" && f.payload.events.some((e) => e.kind === "command.result"),
    );
    expect(acceptedAt).toBeLessThan(resultFrameAt);

    const [result] = resultsFor(cp, command.command_id);
    expect(result?.ok).toBe(true);
    const output = result?.result as Record<string, Record<string, unknown>>;
    expect(output.docker).toMatchObject({
      reachable: true,
      version: expect.stringMatching(/^\d+\.\d+/),
      api_version: expect.stringMatching(/^\d+\.\d+/),
      containers_running: expect.any(Number),
      containers_total: expect.any(Number),
      images: expect.any(Number),
    });
    expect(output.agent).toMatchObject({ version: expect.any(String), uptime_s: expect.any(Number) });
    expect(output.journal).toMatchObject({ pending_events: expect.any(Number), next_event_seq: expect.any(Number) });
    expect(output.disk?.state_dir).toMatchObject({ total_gb: expect.any(Number), used_gb: expect.any(Number) });
    expect(output.disk?.docker_usage).toHaveProperty("complete");
    // Its progress line went out before the result, under the same command id.
    const log = [...cp.stored.values()].find((e) => e.kind === "log" && e.command_id === command.command_id);
    expect(log?.seq).toBeLessThan(result?.seq ?? 0);
  }, 30_000);

  it("runs an environment command through the default registry, reporting its steps before the result", async () => {
    const { cp, identity, connection } = await setup();
    // An environment this server never deployed: the stop fails at its first step, readably.
    const command = signedCommand(cp, identity, "stop", {
      deployment_id: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
      environment_id: "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b",
    });
    sendCommand(connection, command);
    await eventually(() => resultsFor(cp, command.command_id).length === 1, "the result");
    expect(connection.hello?.capabilities).toEqual(expect.arrayContaining(["deploy", "redeploy", "stop", "destroy", "backup", "restore"]));
    const events = [...cp.stored.values()].filter((e) => "command_id" in e && e.command_id === command.command_id);
    expect(events.map((e) => e.kind)).toEqual(["step.started", "log", "step.failed", "command.result"]);
    expect(events[0]).toMatchObject({ step: "initializing", deployment_id: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d" });
    expect(resultsFor(cp, command.command_id)[0]).toMatchObject({
      ok: false,
      error: { code: "not_deployed", message: expect.stringContaining("has no ERP container on this server") },
    });
  });

  it("answers a redelivered command id with the first answer and never runs it twice", async () => {
    const runs: string[] = [];
    const { cp, identity, connection } = await setup(countingRegistry(runs));
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    await eventually(() => resultsFor(cp, command.command_id).length === 1, "the result", 25_000);

    sendCommand(connection, command);
    await eventually(() => framesOf(connection, "command.accepted").length === 2, "the second answer");
    const answers = framesOf(connection, "command.accepted").map((f) => f.payload);
    expect(answers[1]).toEqual(answers[0]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs).toEqual([command.command_id]);
    expect(resultsFor(cp, command.command_id)).toHaveLength(1);
  }, 30_000);

  it.each([
    ["a key it never pinned", "unknown_key"],
    ["a pinned key id over another key's signature", "bad_signature"],
    ["another server", "wrong_server"],
    ["an expired validity window", "expired"],
  ] as const)("rejects a command with %s and never runs it", async (_case, code) => {
    const runs: string[] = [];
    const { cp, identity, journal, connection } = await setup(countingRegistry(runs));
    const other = generateKeyPair();
    const base = signedCommand(cp, identity, "diagnostics", {});
    const { signature: _s, key_id: _k, ...unsigned } = base;
    const command =
      code === "unknown_key"
        ? signCommand({ ...unsigned, type: "diagnostics", params: {} }, other.privateKey, keyIdFor(other.publicKey))
        : code === "bad_signature"
          ? signCommand({ ...unsigned, type: "diagnostics", params: {} }, other.privateKey, cp.signing.keyId)
          : code === "wrong_server"
            ? signedCommand(cp, identity, "diagnostics", {}, { server_id: "00000000-0000-4000-8000-000000000000" })
            : signedCommand(cp, identity, "diagnostics", {}, {
                issued_at: new Date(Date.now() - 20 * 60_000).toISOString(),
                expires_at: new Date(Date.now() - 10 * 60_000).toISOString(),
              });
    sendCommand(connection, command);

    await eventually(() => framesOf(connection, "command.rejected").length === 1, "the rejection");
    expect(framesOf(connection, "command.rejected")[0]?.payload).toMatchObject({ command_id: command.command_id, code });
    expect(framesOf(connection, "command.accepted")).toHaveLength(0);
    expect(journal.getCommand(command.command_id)?.status).toBe("rejected");
    await eventually(
      () => [...cp.stored.values()].some((e) => e.kind === "log" && e.level === "warning" && e.command_id === command.command_id),
      "a warning log event",
    );

    // Redelivered: the same rejection again, still not run, no second warning.
    sendCommand(connection, command);
    await eventually(() => framesOf(connection, "command.rejected").length === 2, "the second rejection");
    const [first, second] = framesOf(connection, "command.rejected").map((f) => f.payload);
    expect(second).toEqual(first);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs).toEqual([]);
    expect([...cp.stored.values()].filter((e) => e.kind === "log" && e.command_id === command.command_id)).toHaveLength(1);
  });

  it("rejects command types it does not run as unsupported_command, before accepting them", async () => {
    const { cp, identity, journal, connection } = await setup();
    // agent.update is a protocol command type an agent run from source has no handler for.
    const tail = signedCommand(cp, identity, "agent.update", {
      version: "99.0.0",
      url: "http://127.0.0.1:9/berth-agent",
      sha256: "0".repeat(64),
      size: 1,
    });
    const { signature: _s, ...body } = signedCommand(cp, identity, "diagnostics", {});
    const unknown = signRaw({ ...body, type: "frobnicate" }, cp.signing.privateKey);
    sendCommand(connection, tail);
    sendCommand(connection, unknown);

    await eventually(() => framesOf(connection, "command.rejected").length === 2, "two rejections");
    expect(framesOf(connection, "command.rejected").map((f) => [f.payload.command_id, f.payload.code])).toEqual([
      [tail.command_id, "unsupported_command"],
      [unknown.command_id, "unsupported_command"],
    ]);
    expect(framesOf(connection, "command.accepted")).toHaveLength(0);
    expect(journal.getCommand(tail.command_id)?.status).toBe("rejected");
    expect(journal.lastCommandSeq()).toBe(0);
  });

  it("stops a running command on command.cancel and reports it cancelled", async () => {
    const registry: HandlerRegistry = {
      diagnostics: (_params, ctx) =>
        new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(new Error("stopped")))),
    };
    const { cp, identity, connection, agent } = await setup(() => registry);
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    await eventually(() => agent.commands.running().includes(command.command_id), "the command to run");

    connection.send("command.cancel", { command_id: command.command_id });
    await eventually(() => resultsFor(cp, command.command_id).length === 1, "the result");
    expect(resultsFor(cp, command.command_id)[0]).toMatchObject({
      ok: false,
      error: { code: "cancelled", message: "cancelled by the control plane" },
    });
  });

  it("reports a handler's failure with its code, and a result the protocol cannot carry as agent_error", async () => {
    let call = 0;
    const registry: HandlerRegistry = {
      diagnostics: async () => {
        call += 1;
        if (call === 1) throw new CommandError("docker_unavailable", "the engine is down");
        return call === 2 ? ({ big: 10n } as unknown as Record<string, unknown>) : ([1, 2] as unknown as Record<string, unknown>);
      },
    };
    const { cp, identity, connection } = await setup(() => registry);
    const failing = signedCommand(cp, identity, "diagnostics", {});
    const notJson = signedCommand(cp, identity, "diagnostics", {});
    const notObject = signedCommand(cp, identity, "diagnostics", {});
    for (const command of [failing, notJson, notObject]) {
      sendCommand(connection, command);
      await eventually(() => resultsFor(cp, command.command_id).length === 1, "a result");
    }
    expect(resultsFor(cp, failing.command_id)[0]).toMatchObject({
      ok: false,
      error: { code: "docker_unavailable", message: "the engine is down" },
    });
    expect(resultsFor(cp, notJson.command_id)[0]).toMatchObject({ ok: false, error: { code: "agent_error" } });
    expect(resultsFor(cp, notObject.command_id)[0]).toMatchObject({ ok: false, error: { code: "agent_error" } });
  });

  it("reports a failure whose message is too long for the protocol with its code and the message truncated", async () => {
    const registry: HandlerRegistry = {
      diagnostics: async () => {
        throw new CommandError("docker_unavailable", "x".repeat(MAX_MESSAGE_LENGTH * 2));
      },
    };
    const { cp, identity, connection } = await setup(() => registry);
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    await eventually(() => resultsFor(cp, command.command_id).length === 1, "a result");
    const [result] = resultsFor(cp, command.command_id);
    expect(result).toMatchObject({ ok: false, error: { code: "docker_unavailable" } });
    expect(result!.error!.message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(result!.error!.message).toMatch(/^x+…\[truncated \d+ characters\]$/);
  });

  it("reports a command cut off by a restart as agent_restarted, and never runs it again", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    let firstRuns = 0;
    const hanging: HandlerRegistry = {
      diagnostics: async (_params, ctx) => {
        firstRuns += 1;
        ctx.emit.log("info", "working on it");
        return new Promise(() => {}); // Never ends: the agent goes away first.
      },
    };
    const first = harness.agent(cp, identity, journal, { registry: hanging });
    const connection = await cp.readyConnection(0);
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    await eventually(() => journal.getCommand(command.command_id)?.status === "running", "the command running");
    await first.shutdown({ commandWaitMs: 50, flushMs: 500 });
    journal.close();

    let secondRuns = 0;
    const counting: HandlerRegistry = {
      diagnostics: async () => {
        secondRuns += 1;
        return {};
      },
    };
    const reopened = harness.journal();
    harness.agent(cp, identity, reopened, { registry: counting });
    const second = await cp.readyConnection(1);
    await eventually(() => resultsFor(cp, command.command_id).length === 1, "the restart result");
    expect(resultsFor(cp, command.command_id)[0]).toMatchObject({
      ok: false,
      error: { code: "agent_restarted", message: "the agent restarted while this command was running" },
    });

    // The control plane's outbox redelivers it after ready: answered, not run.
    sendCommand(second, command);
    await eventually(() => framesOf(second, "command.accepted").length === 1, "the answer");
    expect(framesOf(second, "command.accepted")[0]?.payload).toEqual({ command_id: command.command_id, seq: command.seq });
    expect(second.hello?.last_command_seq).toBe(command.seq);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(firstRuns).toBe(1);
    expect(secondRuns).toBe(0);
  });

  it("takes no new command while shutting down, leaving it to be redelivered", async () => {
    const { cp, identity, journal, agent, connection } = await setup();
    agent.commands.stopAccepting();
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(connection.frames.filter((f) => f.type.startsWith("command."))).toHaveLength(0);
    expect(journal.getCommand(command.command_id)).toBeNull();
  });

  // The control plane signs with its own time; a server without NTP is minutes off it.
  it.each([
    ["10 minutes behind takes its commands", -10 * 60_000, "runs"],
    ["10 minutes ahead takes its commands", 10 * 60_000, "runs"],
    ["two days behind (too wrong to correct) refuses them as expired", -2 * 24 * 3_600_000, "expired"],
  ] as const)("an agent whose clock is %s, judging them by the control plane's time", async (_case, offsetMs, expected) => {
    const runs: string[] = [];
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    const skewed = { ...systemClock, now: () => new Date(Date.now() + offsetMs) };
    harness.agent(cp, identity, journal, { clock: skewed, registry: countingRegistry(runs)(journal) });
    const connection = await cp.readyConnection(0);
    // Valid for five minutes from the control plane's now: outside the 30 s skew either way by the agent's own clock.
    const command = signedCommand(cp, identity, "diagnostics", {});
    sendCommand(connection, command);
    if (expected === "runs") {
      await eventually(() => resultsFor(cp, command.command_id).length === 1, "the result", 25_000);
      expect(runs).toEqual([command.command_id]);
      expect(framesOf(connection, "command.rejected")).toHaveLength(0);
    } else {
      await eventually(() => framesOf(connection, "command.rejected").length === 1, "the rejection");
      expect(framesOf(connection, "command.rejected")[0]?.payload).toMatchObject({ command_id: command.command_id, code: "expired" });
      expect(runs).toEqual([]);
    }
  }, 30_000);
});
