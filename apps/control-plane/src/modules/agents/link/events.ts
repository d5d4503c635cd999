// An agent's event batches into ingestion (../event-ingest.ts) and the cumulative ack back:
// events.ack up_to_seq says everything up to that seq is stored, and the agent forgets it.
// Log lines past the server's budget (budgets.ts) are acknowledged but not stored; a notice
// line takes the last dropped one's place when one is due, and the drop is logged here.
// Events naming another server's deployment or command are acknowledged too (the agent's
// journal must not jam on them) but were not applied: they are counted and logged here.
//
// A write that fails because PostgreSQL cannot be reached (restarting, failing over) is tried
// again, the link held meanwhile, for up to `storeRetryMs`: a database restart then costs the
// fleet a delayed ack, not every link and a wave of reconnects when it is back. The agent
// keeps journaling, and the frames behind the batch wait (frame-queue.ts back-pressure).
import { CLOSE_CODES, type Payload } from "@berth/protocol";
import { retryWhileDatabaseUnavailable } from "../../../db/database-unavailable.ts";
import type { EventIngest } from "../event-ingest.ts";
import type { LogBudget } from "./budgets.ts";
import { close, send, type Connection } from "./connection.ts";

export interface EventIntakeDeps {
  ingest: EventIngest;
  budget: LogBudget;
  seen(serverId: string): void;
  /** Log lines the budget dropped, for the gateway's stats. */
  dropped(count: number): void;
  /** How long a batch is retried while the database is unreachable before the link is dropped. */
  storeRetryMs: number;
  /** Events stored (acknowledged) from this link, for metrics and the host figures it last sent. */
  stored?(serverId: string, events: Payload<"events">["events"]): void;
  log: { warn(o: object, m: string): void };
}

export function createEventIntake(deps: EventIntakeDeps) {
  return async function onEvents(conn: Connection, { events }: Payload<"events">) {
    const serverId = conn.serverId!;
    deps.seen(serverId);
    const admitted = deps.budget.admit(serverId, events);
    if (admitted.dropped > 0) {
      conn.droppedLogLines += admitted.dropped;
      deps.dropped(admitted.dropped);
      if (admitted.notice) {
        deps.log.warn(
          { serverId, deploymentId: admitted.notice.deployment_id, droppedOnLink: conn.droppedLogLines },
          `log budget exceeded: ${admitted.notice.message}`,
        );
      }
    }
    let upTo: number;
    try {
      // Dropped lines at the batch's end (no notice in their place) are acknowledged too.
      const through = admitted.dropped > 0 ? events[events.length - 1]!.seq : undefined;
      const ingested = await retryWhileDatabaseUnavailable(() => deps.ingest.ingest(serverId, admitted.events, through), {
        forMs: deps.storeRetryMs,
        keepTrying: () => conn.socket.readyState === conn.socket.OPEN,
        onWait: (err) => deps.log.warn({ err, serverId }, "database unreachable; holding the link and retrying its events"),
      });
      upTo = ingested.upTo;
      deps.stored?.(serverId, admitted.events);
      if (ingested.refused > 0) {
        conn.refusedEvents += ingested.refused;
        deps.log.warn(
          { serverId, refused: ingested.refused, refusedOnLink: conn.refusedEvents },
          `refused ${ingested.refused} events naming objects of other servers`,
        );
      }
    } catch (err) {
      // Acks are cumulative: acknowledging a later batch would cover this lost one.
      // Drop the link instead; the agent resends from its last ack on reconnect.
      conn.broken = true;
      close(conn, CLOSE_CODES.going_away, "could not store events");
      throw err;
    }
    send(conn, "events.ack", { up_to_seq: upTo });
  };
}
