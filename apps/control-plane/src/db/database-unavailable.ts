// Which errors say that PostgreSQL could not be reached (stopped, restarting, failing over,
// out of connections, the network between) rather than that the work itself was refused:
// the same work may succeed once the database is back.
const UNAVAILABLE_SQLSTATES = new Set([
  "57P01", // admin_shutdown: a fast or smart shutdown ended the session
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up or shutting down
  "53300", // too_many_connections
]);

const UNAVAILABLE_SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);

/** node-postgres's own errors for a connection that ended or never became usable (they carry no code). */
const LOST_CONNECTION = /^Connection terminated|is not queryable|^timeout exceeded when trying to connect/;

/** The error, or one it was raised for (drizzle wraps the driver's error as its `cause`). */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      // Class 08: connection exception.
      if (code.startsWith("08") && code.length === 5) return true;
      if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code)) return true;
    }
    if (LOST_CONNECTION.test(e.message)) return true;
  }
  return false;
}

const FIRST_RETRY_MS = 250;
const LONGEST_RETRY_MS = 2_000;

/**
 * `work()`, tried again (250 ms, doubling to 2 s apart) while it fails because the database
 * is unreachable, `keepTrying()` holds and `forMs` has not passed; any other failure, or the
 * last one, is thrown. `onWait` hears the first failure that is waited out.
 */
export async function retryWhileDatabaseUnavailable<T>(
  work: () => Promise<T>,
  opts: { forMs: number; keepTrying?: () => boolean; onWait?: (err: unknown) => void },
): Promise<T> {
  const giveUpAt = Date.now() + opts.forMs;
  let delay = FIRST_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + delay > giveUpAt || opts.keepTrying?.() === false) throw err;
      if (attempt === 1) opts.onWait?.(err);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, LONGEST_RETRY_MS);
    }
  }
}
