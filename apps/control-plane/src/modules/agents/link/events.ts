// An agent's event batches into ingestion (../event-ingest.ts) and the cumulative ack back:
// events.ack up_to_seq says everything up to that seq is stored, and the agent forgets it.
// Events naming another server's deployment or command are acknowledged too (the agent's
// journal must not jam on them) but were not applied: they are counted and logged here.
import { CLOSE_CODES, type Payload } from "@berth/protocol";
import type { EventIngest } from "../event-ingest.ts";
import { close, send, type Connection } from "./connection.ts";

export function createEventIntake(deps: { ingest: EventIngest; seen(serverId: string): void; log: { warn(o: object, m: string): void } }) {
  return async function onEvents(conn: Connection, { events }: Payload<"events">) {
    deps.seen(conn.serverId!);
    let upTo: number;
    try {
      const ingested = await deps.ingest.ingest(conn.serverId!, events);
      upTo = ingested.upTo;
      if (ingested.refused > 0) {
        conn.refusedEvents += ingested.refused;
        deps.log.warn(
          { serverId: conn.serverId, refused: ingested.refused, refusedOnLink: conn.refusedEvents },
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
