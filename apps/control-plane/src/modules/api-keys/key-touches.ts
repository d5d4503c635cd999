// api_keys.last_used_at, written behind the requests. The column is informative (when was
// this key last used, to the minute), so a replica writes it at most once a minute per key
// and in batches: the keys it saw used go together every FLUSH_MS, in one statement and one
// commit. Written one key at a time, a busy replica sent one UPDATE and commit per active key
// per minute, each costing ~0.36 ms of PostgreSQL's CPU and ~0.1 ms of the replica's
// (bench:api's task route: ~10 µs of PostgreSQL per request at 1,800 active keys); in a
// batch of a hundred, a key costs ~40 µs of both together.
// A flush that fails (the database down) loses its touches; the keys are touched again a
// minute later.

/** How often the touches gathered meanwhile are written. */
export const FLUSH_MS = 2_000;
/** A key is touched at most once per this long on a replica. */
export const TOUCH_EVERY_MS = 60_000;
/** Keys per statement at most; a larger flush sends several. */
const MAX_BATCH = 500;

export interface KeyTouches {
  /** Notes that the key was used at `at`; written within FLUSH_MS unless noted less than a minute ago. */
  touch(keyId: string, at: Date): void;
  /** Writes what is gathered now (on close: nothing noted is left behind). */
  flush(): Promise<void>;
}

export function createKeyTouches(deps: { write: (batch: { id: string; at: Date }[]) => Promise<void>; flushMs?: number; onError?: (err: unknown) => void }): KeyTouches {
  const flushMs = deps.flushMs ?? FLUSH_MS;
  /** When each key was last noted, for the once-a-minute rule (epoch ms). */
  const noted = new Map<string, number>();
  let pending = new Map<string, Date>();
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> = Promise.resolve();

  async function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = null;
    const batch = [...pending].map(([id, at]) => ({ id, at }));
    pending = new Map();
    // One flush at a time: a slow one is not overtaken by the next.
    writing = writing.then(async () => {
      for (let i = 0; i < batch.length; i += MAX_BATCH) {
        await deps.write(batch.slice(i, i + MAX_BATCH)).catch((err: unknown) => deps.onError?.(err));
      }
    });
    await writing;
  }

  return {
    touch(keyId, at) {
      const ms = at.getTime();
      if (ms - (noted.get(keyId) ?? -Infinity) < TOUCH_EVERY_MS) return;
      noted.set(keyId, ms);
      pending.set(keyId, at);
      if (!timer) {
        timer = setTimeout(() => void flush(), flushMs);
        // Pending touches do not keep a process alive; a closing app flushes them.
        timer.unref();
      }
    },
    flush,
  };
}
