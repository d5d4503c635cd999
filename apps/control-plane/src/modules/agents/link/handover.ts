// A draining replica's links, handed over to the other replicas (lifecycle/drain.ts): each
// stops being read, finishes the frames it has received (events stored and acknowledged,
// answers recorded), then is closed with 1012 "draining", after which its agent reconnects,
// through the load balancer, to another replica within a short random delay. The closes are
// spread evenly over a window, so a replica holding thousands of agents does not send them
// all to the others in one instant. Commands sent here and not yet answered stay pending in
// the outbox; the replica the agent reconnects to sends them again on `ready`, and the agent
// answers a command id it has already run with the recorded result.
import { CLOSE_CODES } from "@berth/protocol";
import { close, type Connection } from "./connection.ts";

export const HANDOVER_REASON = "draining";
/** After its close frame, how long a link may take to answer before it is dropped. */
const CLOSE_GRACE_MS = 2_000;
/** Closes due within this long of each other go out together, rather than a timer each. */
const BATCH_MS = 5;

/** Hands over every link in `conns`, evenly over `windowMs`; resolves with how many, once all are closed. */
export async function handOverLinks(conns: readonly Connection[], windowMs: number, handedOver: () => void): Promise<number> {
  const start = Date.now();
  const closing: Promise<void>[] = [];
  for (let i = 0; i < conns.length; i++) {
    const wait = start + (windowMs * i) / conns.length - Date.now();
    if (wait >= BATCH_MS) await new Promise((resolve) => setTimeout(resolve, wait));
    const conn = conns[i]!;
    closing.push(handOver(conn).then((wasOpen) => (wasOpen ? handedOver() : undefined)));
  }
  await Promise.all(closing);
  return closing.length;
}

/** Whether the link was still open when its turn came. */
async function handOver(conn: Connection): Promise<boolean> {
  const socket = conn.socket;
  if (socket.readyState !== socket.OPEN) {
    await closedWithin(conn, CLOSE_GRACE_MS);
    return false;
  }
  // No more frames are read; those already received are handled (and answered) first.
  conn.held = true;
  socket.pause();
  while (conn.queued > 0) await conn.queue;
  close(conn, CLOSE_CODES.service_restart, HANDOVER_REASON);
  // Reading again lets the agent's answering close frame in. A frame it sent meanwhile is
  // still stored, but can no longer be acknowledged: the agent sends it again to the next
  // replica, which de-duplicates it by seq.
  socket.resume();
  await closedWithin(conn, CLOSE_GRACE_MS);
  return true;
}

/** Resolves once the socket is closed, dropping it after `ms` if its peer has not answered the close. */
function closedWithin(conn: Connection, ms: number): Promise<void> {
  const socket = conn.socket;
  if (socket.readyState === socket.CLOSED) return Promise.resolve();
  const timer = setTimeout(() => socket.terminate(), ms);
  return new Promise((resolve) =>
    socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    }),
  );
}
