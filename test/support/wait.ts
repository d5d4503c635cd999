// Polls a condition until it holds or time runs out (for effects of other processes).
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000, intervalMs = 50): Promise<void> {
  await waitUntil("a condition", check, { timeoutMs, intervalMs });
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs: number;
  /** Appended to the timeout error, e.g. the last lines a child process printed. */
  detail?: () => string | Promise<string>;
}

/** Polls `check` until it holds; on timeout throws "timed out waiting for <what>" (and the detail). */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${opts.detail ? `\n${await opts.detail()}` : ""}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
}

/** Polls `read` until it gives a value (not undefined), within 10 s unless told otherwise; returns it. */
export async function waitForValue<T>(what: string, read: () => T | undefined | Promise<T | undefined>, opts: WaitOptions = { timeoutMs: 10_000, intervalMs: 50 }): Promise<T> {
  let value: T | undefined;
  await waitUntil(what, async () => (value = await read()) !== undefined, opts);
  return value as T;
}
