// Sends journalled events over one connection, oldest first, and deletes them from the
// journal as the control plane acknowledges them. The journal is the queue: the sender keeps
// only seq numbers in memory, never events, so a long outage cannot grow the agent's heap.
//
// Flow control: one batch in flight by default. Seqs may have gaps (the journal drops
// low-priority lines when full) and acks are cumulative up to the highest seq stored, so the
// control plane cannot tell a batch it failed to store from a legitimate gap: with two
// batches in flight, storing the second after the first failed would acknowledge both, and
// the first would be lost. One in flight makes that impossible here, whatever the gateway
// does, and costs little: 500 events per round trip plus insert is several thousand events
// a second. The window stays an option, counted in batches and tracked by last seq only.
import { MAX_EVENTS_PER_BATCH, type Event } from "@berth/protocol";
import type { Clock, TimerHandle } from "../clock.ts";
import { toWireEvent } from "../events/wire-events.ts";
import type { Journal } from "../journal/journal-types.ts";
import type { Logger } from "../logger.ts";

export interface EventSenderOptions {
  /** At most MAX_EVENTS_PER_BATCH (500). */
  maxBatchEvents?: number;
  /** A batch stops growing past this many bytes of JSON (one event always goes). Default 1 MiB. */
  maxBatchBytes?: number;
  /** Batches sent and not yet acknowledged. Default 1 (see above before raising it). */
  window?: number;
  /** Without ack progress for this long, what is unacknowledged is sent again. Default 30 s. */
  ackTimeoutMs?: number;
}

export interface EventSender {
  /** Begins sending from `fromSeq` (ready.resend_from). */
  start(fromSeq: number): void;
  /** An `events.ack`: deletes acknowledged events from the journal and slides the window. */
  acked(upToSeq: number): void;
  /** New events are in the journal. */
  wake(): void;
  /** Resolves true once every journalled event is acknowledged, false after `ms`. */
  settled(ms: number): Promise<boolean>;
  stop(): void;
}

export function createEventSender(deps: {
  journal: Pick<Journal, "pending" | "ack" | "lastAckedSeq">;
  send: (events: Event[]) => void;
  clock: Clock;
  logger: Logger;
  options?: EventSenderOptions;
}): EventSender {
  const { journal, clock, logger } = deps;
  const maxEvents = Math.min(deps.options?.maxBatchEvents ?? MAX_EVENTS_PER_BATCH, MAX_EVENTS_PER_BATCH);
  const maxBytes = deps.options?.maxBatchBytes ?? 1024 * 1024;
  const window = deps.options?.window ?? 1;
  const ackTimeoutMs = deps.options?.ackTimeoutMs ?? 30_000;

  let active = false;
  let scheduled = false;
  /** Seq after which the next batch starts; moves back to the last ack on a resend. */
  let cursor = 0;
  /** Highest seq ever sent on this connection: the most the control plane can acknowledge. */
  let highestSent = 0;
  /** Last seq of each batch awaiting its ack, ascending. */
  let inFlight: number[] = [];
  let ackTimer: TimerHandle | undefined;
  const waiters = new Set<(settled: boolean) => void>();

  const allAcked = () => journal.pending(undefined, 1).length === 0;

  function wake(): void {
    if (!active || scheduled) return;
    scheduled = true;
    // Deferred so a burst of appends in one tick leaves as one batch, not one frame each.
    setImmediate(pump);
  }

  function pump(): void {
    scheduled = false;
    try {
      fill();
    } catch (error) {
      // The journal failed (disk full, say); the next append or ack tries again.
      logger.error({ error: String(error) }, "cannot read events from the journal");
    }
  }

  function fill(): void {
    while (active && inFlight.length < window) {
      const rows = journal.pending(cursor, maxEvents);
      if (rows.length === 0) return;
      const events: Event[] = [];
      let bytes = 0;
      for (const row of rows) {
        const event = toWireEvent(row);
        const size = Buffer.byteLength(JSON.stringify(event));
        if (events.length > 0 && bytes + size > maxBytes) break;
        events.push(event);
        bytes += size;
      }
      const last = events[events.length - 1];
      if (last === undefined) return;
      deps.send(events);
      cursor = last.seq;
      highestSent = Math.max(highestSent, cursor);
      inFlight.push(cursor);
      if (ackTimer === undefined) armAckTimer();
    }
  }

  function armAckTimer(): void {
    if (ackTimer !== undefined) clock.clearTimeout(ackTimer);
    ackTimer = undefined;
    if (!active || inFlight.length === 0) return;
    ackTimer = clock.setTimeout(() => {
      ackTimer = undefined;
      if (!active || inFlight.length === 0) return;
      // Resending is safe (the control plane de-duplicates on seq) and unsticks a batch
      // whose ack was lost, without dropping a connection that is otherwise alive.
      const from = journal.lastAckedSeq();
      logger.warn({ in_flight: inFlight.length, resend_after: from }, "no events.ack in time; resending");
      cursor = from;
      inFlight = [];
      wake();
    }, ackTimeoutMs);
  }

  return {
    start(fromSeq) {
      active = true;
      cursor = Math.max(0, fromSeq - 1);
      highestSent = cursor;
      inFlight = [];
      wake();
    },
    acked(upToSeq) {
      // The journal would accept an ack up to its last seq, deleting events never sent;
      // an ack beyond what this connection carried is a control-plane bug, not a receipt.
      if (upToSeq > highestSent) {
        logger.warn({ up_to_seq: upToSeq, highest_sent: highestSent }, "ack beyond the events sent; applied only up to those");
      }
      const upTo = Math.min(upToSeq, highestSent);
      const { lastAckedSeq } = journal.ack(upTo);
      const before = inFlight.length;
      inFlight = inFlight.filter((seq) => seq > upTo);
      if (cursor < lastAckedSeq) cursor = lastAckedSeq;
      if (inFlight.length !== before) armAckTimer();
      if (waiters.size > 0 && allAcked()) for (const resolve of [...waiters]) resolve(true);
      wake();
    },
    wake,
    settled(ms) {
      if (allAcked()) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (value: boolean) => {
          clock.clearTimeout(timer);
          waiters.delete(done);
          resolve(value);
        };
        const timer = clock.setTimeout(() => done(false), ms);
        waiters.add(done);
      });
    },
    stop() {
      active = false;
      inFlight = [];
      if (ackTimer !== undefined) clock.clearTimeout(ackTimer);
      ackTimer = undefined;
      for (const resolve of [...waiters]) resolve(false);
    },
  };
}
