// The two shapes of an event: the protocol's flat wire form ({seq, ts, kind, ...fields}) and
// the journal's generic row ({seq, ts, kind, level, body}). The journal stays ignorant of
// the protocol; this is the only place that maps between them.
import { Compile } from "typebox/compile";
import { Event, firstError, type EventInput } from "@berth/protocol";
import type { EventInput as JournalEventInput, JournalEvent } from "../journal/journal-types.ts";
import { withBoundedMessages } from "./bounded-messages.ts";

const checkEvent = Compile(Event);

export function toJournalInput(event: EventInput): JournalEventInput {
  if (event.kind === "log") {
    const { kind, level, ...body } = event;
    return { kind, level, body };
  }
  const { kind, ...body } = event;
  return { kind, body };
}

/** Why the event would not pass the protocol's schema once numbered, or null. */
export function eventProblem(event: EventInput, ts = new Date().toISOString()): string | null {
  const candidate = { ...event, seq: 1, ts };
  if (checkEvent.Check(candidate)) return null;
  return firstError(checkEvent, candidate);
}

/**
 * The wire form of a journalled event. A row that no longer passes the schema (a bug, or a
 * file edited by hand) is replaced by an error log under the same seq: sending it as is
 * would get the whole batch refused, and holding it back would stall every later event.
 */
export function toWireEvent(row: JournalEvent): Event {
  const wire: Record<string, unknown> = { ...row.body, seq: row.seq, ts: row.ts, kind: row.kind };
  if (row.kind === "log") wire.level = row.level;
  if (checkEvent.Check(wire)) return wire;
  // Journalled before messages were bounded (by an older agent): truncated now, not replaced.
  const bounded = withBoundedMessages(wire as unknown as EventInput) as unknown as Record<string, unknown>;
  if (bounded !== wire && checkEvent.Check(bounded)) return bounded;
  return {
    seq: row.seq,
    ts: row.ts,
    kind: "log",
    level: "error",
    command_id: null,
    deployment_id: null,
    step: null,
    message: `the agent could not send its event ${row.seq} (${row.kind}): ${firstError(checkEvent, wire)}`,
  };
}
