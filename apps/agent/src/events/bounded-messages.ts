// Messages cut to the protocol's MAX_MESSAGE_LENGTH (its truncateMessage) before an event is
// journalled. The control plane refuses a batch holding a longer message, and the journal
// would send that batch again on every reconnect: a container printing one huge line would
// stall every event after it. A cut message ends with "…[truncated N characters]" and stays
// within the limit.
import { MAX_MESSAGE_LENGTH, truncateMessage, type EventInput } from "@berth/protocol";

const tooLong = (text: unknown): text is string => typeof text === "string" && text.length > MAX_MESSAGE_LENGTH;

/**
 * The event with every message the protocol bounds (a log line, a step's message, an
 * error's message) truncated to MAX_MESSAGE_LENGTH; the same object when none is too long.
 */
export function withBoundedMessages(event: EventInput): EventInput {
  switch (event.kind) {
    case "log":
    case "step.started":
    case "step.finished":
      return tooLong(event.message) ? { ...event, message: truncateMessage(event.message) } : event;
    case "step.failed": {
      const bounded = tooLong(event.message) ? { ...event, message: truncateMessage(event.message) } : event;
      return tooLong(event.error?.message) ? { ...bounded, error: { ...event.error, message: truncateMessage(event.error.message) } } : bounded;
    }
    case "command.result":
      return tooLong(event.error?.message) ? { ...event, error: { ...event.error, message: truncateMessage(event.error.message) } } : event;
    default:
      return event;
  }
}
