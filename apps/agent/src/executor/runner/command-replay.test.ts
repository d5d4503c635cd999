// Replays of commands the agent ran and has since forgotten, through the real command path
// (a real agent, link and journal against the fake control plane): refused, never run again.
// And the race a naive "seq must increase" rule would lose: commands whose seqs arrive out of
// order all run.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { signedCommand, useAgentHarness } from "../../agent/agent.test-helpers.ts";
import { systemClock, type Clock } from "../../clock.ts";
import { eventually, framesOf, sendCommand } from "../../link/fake-control-plane.test-helpers.ts";
import type { HandlerRegistry } from "./handler-types.ts";

const DAY = 24 * 3_600_000;

/** A registry whose diagnostics only records that it ran. */
const counting = (runs: string[]): HandlerRegistry => ({
  diagnostics: async (_params, ctx) => {
    runs.push(ctx.commandId);
    return {};
  },
});

describe("replayed commands", () => {
  const harness = useAgentHarness();

  /**
   * An agent runs one command valid for 30 days (as keys.update is) and stops; then a second
   * agent starts on the same journal (after `between`, which may rewrite it). Returns the
   * command, every run, the second agent's connection and what its journal keeps of it.
   */
  async function replayAfterRestart(options: { clock?: Clock; between?: () => void } = {}) {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const runs: string[] = [];
    const overrides = { registry: counting(runs), ...(options.clock ? { clock: options.clock } : {}) };
    const journal = harness.journal();
    const first = harness.agent(cp, identity, journal, overrides);
    const before = await cp.readyConnection(0);
    const command = signedCommand(cp, identity, "diagnostics", {}, { expires_at: new Date(Date.now() + 30 * DAY).toISOString() });
    sendCommand(before, command);
    await eventually(() => journal.getCommand(command.command_id)?.status === "done", "the command to run");
    await first.shutdown({ commandWaitMs: 100, flushMs: 500 });
    journal.close();

    options.between?.();
    const reopened = harness.journal();
    harness.agent(cp, identity, reopened, overrides);
    const after = await cp.readyConnection(1);
    const forgotten = { present: reopened.getCommand(command.command_id) !== null, seq: reopened.forgottenCommandSeq() };
    return { command, runs, after, forgotten };
  }

  /** Sends `command` on `after` and expects it refused as stale_command, having run once only. */
  async function expectStale({ command, runs, after }: Awaited<ReturnType<typeof replayAfterRestart>>) {
    sendCommand(after, command);
    await eventually(() => framesOf(after, "command.rejected").length === 1, "the rejection");
    expect(framesOf(after, "command.rejected")[0]?.payload).toMatchObject({ command_id: command.command_id, code: "stale_command" });
    expect(framesOf(after, "command.accepted")).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(runs).toEqual([command.command_id]);
  }

  it("refuses a still-valid replay of a command it ran and forgot as stale_command, and never runs it again", async () => {
    let offsetMs = 0;
    const clock: Clock = { ...systemClock, now: () => new Date(Date.now() + offsetMs) };
    // The server's clock runs a month ahead before the second start, which therefore forgets
    // the command (finished over a week ago and expired, by that clock)...
    const replay = await replayAfterRestart({ clock, between: () => (offsetMs = 31 * DAY) });
    expect(replay.forgotten).toEqual({ present: false, seq: replay.command.seq });

    // ...then the clock is set right, and the command comes again inside its window.
    offsetMs = 0;
    await expectStale(replay);
  });

  it("refuses a replay of a command an older agent forgot after a week while it was still valid", async () => {
    let commandId = "";
    // What the journal looks like after an agent older than the expiry rule pruned it: the
    // command gone a week after it ran, whatever its expiry, and no forgotten seq kept. This
    // agent then upgrades over it.
    const olderAgentPruned = () => {
      const db = new DatabaseSync(join(harness.dir(), "journal.db"));
      commandId = (db.prepare("SELECT command_id FROM commands").get()?.command_id as string | undefined) ?? "";
      db.prepare("DELETE FROM commands").run();
      db.prepare("DELETE FROM meta WHERE key = 'forgotten_command_seq'").run();
      db.close();
    };
    const replay = await replayAfterRestart({ between: olderAgentPruned });
    expect(commandId).toBe(replay.command.command_id);
    expect(replay.forgotten).toEqual({ present: false, seq: replay.command.seq });
    await expectStale(replay);
  });

  it("runs commands whose seqs arrive out of order (issued together, or resent by the outbox sweep)", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const runs: string[] = [];
    const journal = harness.journal();
    harness.agent(cp, identity, journal, { registry: counting(runs) });
    const connection = await cp.readyConnection(0);
    const five = signedCommand(cp, identity, "diagnostics", {});
    const six = signedCommand(cp, identity, "diagnostics", {});
    expect(six.seq).toBeGreaterThan(five.seq);

    sendCommand(connection, six);
    await eventually(() => runs.length === 1, "the later seq to run");
    sendCommand(connection, five);
    await eventually(() => runs.length === 2, "the earlier seq to run too");
    expect(runs).toEqual([six.command_id, five.command_id]);
    // The agent starts a command before its command.accepted frame crosses the socket, so
    // the run can be counted while the frame is still on its way.
    await eventually(() => framesOf(connection, "command.accepted").length === 2, "both acceptances");
    expect(framesOf(connection, "command.accepted").map((f) => f.payload)).toEqual([
      { command_id: six.command_id, seq: six.seq },
      { command_id: five.command_id, seq: five.seq },
    ]);
    expect(framesOf(connection, "command.rejected")).toHaveLength(0);
  });
});
