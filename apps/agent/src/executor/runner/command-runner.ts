// Commands from the control plane: answered from the journal when seen before (never run
// twice), verified otherwise (a seq at or below one the journal forgot is a replay too),
// journalled, acknowledged, then run by their handler. Progress and the outcome leave as
// events through the journal.
import {
  COMMAND_REJECTION_CODES,
  truncateMessage,
  verifyCommand,
  type CommandAccepted,
  type CommandRejected,
  type CommandRejectionCode,
  type Command,
  type EventInput,
  type KeyObject,
  type SignedCommand,
} from "@berth/protocol";
import type { Clock, ControlPlaneTime } from "../../clock.ts";
import type { DockerClient } from "../../docker/docker-client.ts";
import type { EventOutbox } from "../../events/event-outbox.ts";
import { withBoundedMessages } from "../../events/bounded-messages.ts";
import { eventProblem, toJournalInput } from "../../events/wire-events.ts";
import type { CommandRecord, Journal } from "../../journal/journal-types.ts";
import type { Logger } from "../../logger.ts";
import { createEmitter } from "./command-emitter.ts";
import { failedOutcome, type CommandOutcome } from "./command-outcome.ts";
import { bindHandler, CommandError, type BoundHandler, type HandlerRegistry, type JsonObject } from "./handler-types.ts";

export type CommandAnswer =
  | { type: "command.accepted"; payload: CommandAccepted }
  | { type: "command.rejected"; payload: CommandRejected };

export interface CommandRunner {
  /** The answer to send, or null while shutting down (the control plane resends later). */
  receive(command: SignedCommand): CommandAnswer | null;
  /** Signals a running command to stop; false when it is not running here. */
  cancel(commandId: string): boolean;
  /** Reports commands a previous process left unfinished as failed; never re-runs them. */
  finishInterrupted(): number;
  stopAccepting(): void;
  /** Waits for running commands; true when none is left. */
  drain(timeoutMs: number): Promise<boolean>;
  running(): string[];
  /** The journal is about to close: late events of a still-running handler are dropped. */
  close(): void;
}

export interface CommandRunnerDeps {
  journal: Pick<
    Journal,
    | "getCommand"
    | "forgottenCommandSeq"
    | "acceptCommand"
    | "markCommandRunning"
    | "finishCommand"
    | "rejectCommand"
    | "interruptedCommands"
  >;
  outbox: EventOutbox;
  registry: HandlerRegistry;
  trustedKeys: ReadonlyMap<string, KeyObject>;
  serverId: string;
  docker: DockerClient;
  clock: Clock;
  /** What a command's validity is judged by (the control plane's time); default `clock`. */
  controlPlaneTime?: Pick<ControlPlaneTime, "now">;
  logger: Logger;
  /** A command still running after this is aborted with `timeout`. Default 30 minutes. */
  maxRunMs?: number;
}

export const AGENT_RESTARTED = {
  code: "agent_restarted",
  message: "the agent restarted while this command was running",
} as const;

// Failing these, nothing in the command can be trusted, its seq included.
const UNAUTHENTICATED: readonly CommandRejectionCode[] = ["unknown_key", "bad_signature"];

interface Running {
  controller: AbortController;
  timer: ReturnType<Clock["setTimeout"]>;
  done: Promise<void>;
}

export function createCommandRunner(deps: CommandRunnerDeps): CommandRunner {
  const { journal, outbox, registry, clock, logger } = deps;
  const maxRunMs = deps.maxRunMs ?? 30 * 60_000;
  const running = new Map<string, Running>();
  let accepting = true;
  let closed = false;

  function reject(cmd: SignedCommand, code: CommandRejectionCode, message: string): CommandAnswer {
    const trusted = !UNAUTHENTICATED.includes(code);
    journal.rejectCommand({
      commandId: cmd.command_id,
      seq: trusted ? cmd.seq : null,
      type: trusted ? cmd.type : null,
      command: cmd,
      result: { code, message },
    });
    logger.warn({ command_id: cmd.command_id, type: cmd.type, code }, `command rejected: ${message}`);
    outbox.append({
      kind: "log",
      level: "warning",
      command_id: cmd.command_id,
      deployment_id: null,
      step: null,
      message: `Command ${cmd.command_id} (${cmd.type}) rejected: ${code}: ${message}`,
      data: { code, type: cmd.type },
    });
    return { type: "command.rejected", payload: { command_id: cmd.command_id, code, message: truncateMessage(message) } };
  }

  function start(command: Command, handler: BoundHandler): void {
    const controller = new AbortController();
    const timer = clock.setTimeout(
      () => controller.abort(new CommandError("timeout", `the command ran longer than ${maxRunMs} ms`)),
      maxRunMs,
    );
    const done = execute(command, handler, controller.signal).finally(() => {
      clock.clearTimeout(timer);
      running.delete(command.command_id);
    });
    running.set(command.command_id, { controller, timer, done });
  }

  async function execute(command: Command, handler: BoundHandler, signal: AbortSignal): Promise<void> {
    // Yield once so the caller sends command.accepted before the handler's first event.
    await new Promise((resolve) => setImmediate(resolve));
    const emit = createEmitter({ outbox, command, isClosed: () => closed });
    let outcome: CommandOutcome;
    try {
      journal.markCommandRunning(command.command_id);
      logger.info({ command_id: command.command_id, type: command.type }, "command started");
      const result: JsonObject = await handler({
        commandId: command.command_id,
        signal,
        emit,
        docker: deps.docker,
      });
      outcome = { ok: true, result };
    } catch (error) {
      outcome = failedOutcome(error, signal);
    }
    if (closed) return; // Left as running in the journal: the next start reports agent_restarted.
    finish(command.command_id, outcome);
    logger.info(
      { command_id: command.command_id, type: command.type, ok: outcome.ok, ...(outcome.ok ? {} : { error: outcome.error }) },
      "command finished",
    );
  }

  function finish(commandId: string, reported: CommandOutcome): void {
    // An error message too long for the protocol is truncated (the journal's own record keeps it whole).
    let event: EventInput = withBoundedMessages({ kind: "command.result", command_id: commandId, ...reported });
    let outcome = reported;
    // A result the protocol cannot carry would be replaced in transit by an error line, and
    // the control plane would wait for a result forever; fail the command visibly instead.
    const problem = resultProblem(event);
    if (problem !== null) {
      outcome = { ok: false, error: { code: "agent_error", message: `the handler's result is invalid: ${problem}` } };
      event = { kind: "command.result", command_id: commandId, ...outcome };
    }
    try {
      journal.finishCommand({ commandId, result: outcome, event: toJournalInput(event) });
    } catch (error) {
      // Left unfinished in the journal: the next start reports it as agent_restarted.
      logger.error({ command_id: commandId, error: String(error) }, "cannot record a command's result");
      return;
    }
    outbox.notify();
  }

  return {
    receive(cmd) {
      if (!accepting) return null;
      const known = journal.getCommand(cmd.command_id);
      if (known !== null) return answerFor(known);

      const verdict = verifyCommand(cmd, {
        trustedKeys: deps.trustedKeys,
        serverId: deps.serverId,
        now: (deps.controlPlaneTime ?? clock).now(),
        seenCommandIds: (id) => journal.getCommand(id) !== null,
        // Seqs may arrive out of order, so only one at or below a forgotten command's is refused.
        forgottenSeq: journal.forgottenCommandSeq(),
      });
      if (!verdict.ok) return reject(cmd, verdict.code, verdict.message);
      const command = verdict.command;
      // Checked before accepting: an accepted command must be one this agent can run.
      const handler = bindHandler(registry, command.type, command.params);
      if (handler === undefined) {
        return reject(cmd, "unsupported_command", `this agent does not run "${command.type}" commands`);
      }

      const accepted = journal.acceptCommand({
        commandId: command.command_id,
        seq: command.seq,
        type: command.type,
        command: cmd,
      });
      if (!accepted.shouldRun) return answerFor(accepted.record);
      start(command, handler);
      return { type: "command.accepted", payload: { command_id: command.command_id, seq: command.seq } };
    },

    cancel(commandId) {
      const entry = running.get(commandId);
      if (entry === undefined) return false;
      entry.controller.abort(new CommandError("cancelled", "cancelled by the control plane"));
      return true;
    },

    finishInterrupted() {
      const interrupted = journal.interruptedCommands();
      for (const record of interrupted) {
        logger.warn({ command_id: record.commandId, type: record.type }, AGENT_RESTARTED.message);
        finish(record.commandId, { ok: false, error: { ...AGENT_RESTARTED } });
      }
      return interrupted.length;
    },

    stopAccepting() {
      accepting = false;
    },

    async drain(timeoutMs) {
      if (running.size === 0) return true;
      let timer: ReturnType<Clock["setTimeout"]> | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = clock.setTimeout(resolve, timeoutMs);
      });
      await Promise.race([Promise.all([...running.values()].map((entry) => entry.done)), deadline]);
      if (timer !== undefined) clock.clearTimeout(timer);
      return running.size === 0;
    },

    running: () => [...running.keys()],

    close() {
      accepting = false;
      closed = true;
      // A straggler's deadline timer must not keep the process alive after shutdown.
      for (const entry of running.values()) clock.clearTimeout(entry.timer);
    },
  };
}

/** The answer a command got the first time, for a redelivered id. */
function answerFor(record: CommandRecord): CommandAnswer {
  if (record.status === "rejected") {
    const result = (record.result ?? {}) as { code?: unknown; message?: unknown };
    const code = (COMMAND_REJECTION_CODES as readonly unknown[]).includes(result.code)
      ? (result.code as CommandRejectionCode)
      : "invalid_params";
    const message = typeof result.message === "string" ? result.message : "rejected";
    return { type: "command.rejected", payload: { command_id: record.commandId, code, message: truncateMessage(message) } };
  }
  // accepted, running or done: the command was accepted once, and that stays the answer.
  // The journal's schema guarantees a seq on every command that is not rejected.
  return { type: "command.accepted", payload: { command_id: record.commandId, seq: record.seq ?? 1 } };
}

/** Checks the result as it will be stored: through JSON, which drops or refuses some values. */
function resultProblem(event: EventInput): string | null {
  let stored: EventInput;
  try {
    stored = JSON.parse(JSON.stringify(event)) as EventInput;
  } catch (error) {
    return error instanceof Error ? error.message : "not JSON";
  }
  return eventProblem(stored);
}
