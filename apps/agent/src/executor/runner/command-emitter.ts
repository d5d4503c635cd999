// The `emit` a handler gets: events stamped with its command and deployment ids.
import type { Command, EventInput } from "@berth/protocol";
import type { EventOutbox } from "../../events/event-outbox.ts";
import type { CommandEmitter } from "./handler-types.ts";

/** Of its command the emitter reads only the id and the params' deployment id. */
export function createEmitter(deps: { outbox: EventOutbox; command: Pick<Command, "command_id" | "params">; isClosed: () => boolean }): CommandEmitter {
  const { outbox, command, isClosed } = deps;
  const ids = {
    command_id: command.command_id,
    deployment_id: "deployment_id" in command.params ? command.params.deployment_id : null,
  };
  // After shutdown closed the journal, a straggling handler's events have nowhere to go;
  // its command is reported as agent_restarted at the next start instead.
  const append = (event: EventInput): void => {
    if (!isClosed()) outbox.append(event);
  };
  return {
    log(level, message, options = {}) {
      append({
        kind: "log",
        level,
        ...ids,
        message,
        step: options.step ?? null,
        ...(options.data === undefined ? {} : { data: options.data }),
      });
    },
    stepStarted(step, message) {
      append({ kind: "step.started", ...ids, step, ...(message === undefined ? {} : { message }) });
    },
    stepFinished(step, message) {
      append({ kind: "step.finished", ...ids, step, ...(message === undefined ? {} : { message }) });
    },
    stepFailed(step, error) {
      append({ kind: "step.failed", ...ids, step, error });
    },
  };
}
