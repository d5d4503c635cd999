// Back-pressure on one link. Frames are handled one after another (acks and results keep
// their order), on the connection's promise chain; while more than PAUSE_ABOVE wait, the
// socket stops being read, so TCP flow control holds the sender back instead of the
// control plane's memory growing. Reading resumes once RESUME_AT or fewer wait. An agent
// keeps one batch on the wire and waits for its ack, so a well-behaved one is never paused.
import type { Connection } from "./connection.ts";

export const PAUSE_ABOVE = 8;
export const RESUME_AT = PAUSE_ABOVE / 2;

/** Counted across a gateway's links, for its stats. */
export interface QueueStats {
  /** Times a link was paused. */
  pauses: number;
  /** The most frames that ever waited on one link at once. */
  peakQueued: number;
}

/** Queues `task` behind the connection's earlier frames; its failure goes to `onError`, never further. */
export function enqueue(conn: Connection, task: () => Promise<void> | void, onError: (err: unknown) => void, stats: QueueStats) {
  conn.queued += 1;
  if (conn.queued > stats.peakQueued) stats.peakQueued = conn.queued;
  if (conn.queued > PAUSE_ABOVE && !conn.socket.isPaused) {
    conn.socket.pause();
    stats.pauses += 1;
  }
  conn.queue = conn.queue
    .then(task)
    .catch(onError)
    .finally(() => {
      conn.queued -= 1;
      if (conn.queued <= RESUME_AT && conn.socket.isPaused && !conn.held) conn.socket.resume();
    });
}
