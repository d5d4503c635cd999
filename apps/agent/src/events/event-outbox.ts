// Where every event producer (command handlers, the stats sampler, the link itself) writes.
// The journal is the queue: append writes there and wakes the sender, which reads the
// journal back. Nothing is kept in memory, so an outage of any length costs disk, bounded
// by the journal's cap, not RAM.
import type { EventInput } from "@berth/protocol";
import type { Journal, JournalEvent } from "../journal/journal-types.ts";
import { withBoundedMessages } from "./bounded-messages.ts";
import { eventProblem, toJournalInput } from "./wire-events.ts";

export interface EventOutbox {
  /**
   * Journals the event (its messages truncated to the protocol's MAX_MESSAGE_LENGTH) and
   * wakes the sender. Throws a TypeError on an invalid event.
   */
  append(event: EventInput): JournalEvent;
  /** Wakes the sender after events written by another journal call (finishCommand). */
  notify(): void;
  subscribe(listener: () => void): () => void;
}

export function createEventOutbox(journal: Pick<Journal, "append">): EventOutbox {
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  return {
    append(input) {
      // A message too long for the protocol is truncated, not refused: a container's huge
      // log line is still worth its first 8 KiB.
      const event = withBoundedMessages(input);
      // Checked before it is written: a bad event in the journal could only be sent as a
      // substitute error line, and the fault is easiest to find at its source.
      const problem = eventProblem(event);
      if (problem !== null) throw new TypeError(`invalid ${event.kind} event: ${problem}`);
      const stored = journal.append(toJournalInput(event));
      notify();
      return stored;
    },
    notify,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
