// Per-item database work that arrives in bursts (each key's budget lease when a rate window
// starts, each key's lookup when its cache entry runs out), done in few statements: the
// first item goes out at once, and the items asked for while a statement is in flight go
// together in the next one. No item waits for a timer, and a burst takes one connection of
// the pool instead of one per item.

export interface CoalesceOptions<I> {
  /** Items per statement at most; the rest wait for the next one. */
  max: number;
  /** Items with the same id never share a statement (a later one waits for the next). */
  idOf: (item: I) => string;
}

/** run() gets a batch of distinct items and answers each, in the batch's order. */
export function coalesce<I, O>(run: (batch: I[]) => Promise<O[]>, opts: CoalesceOptions<I>): (item: I) => Promise<O> {
  interface Waiting {
    item: I;
    resolve(value: O): void;
    reject(error: unknown): void;
  }
  let queue: Waiting[] = [];
  let inFlight = false;

  async function drain(): Promise<void> {
    inFlight = true;
    try {
      while (queue.length > 0) {
        const ids = new Set<string>();
        const batch: Waiting[] = [];
        const later: Waiting[] = [];
        for (const w of queue) {
          const id = opts.idOf(w.item);
          if (batch.length < opts.max && !ids.has(id)) {
            ids.add(id);
            batch.push(w);
          } else later.push(w);
        }
        queue = later;
        try {
          const answers = await run(batch.map((w) => w.item));
          batch.forEach((w, i) => w.resolve(answers[i]!));
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      inFlight = false;
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!inFlight) void drain();
    });
}
