import { describe, expect, it } from "vitest";
import { repeat } from "./repeat.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("repeat", () => {
  it("never runs a task again while its last run is still going", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const loop = repeat(
      async () => {
        running++;
        most = Math.max(most, running);
        await sleep(30); // six times the interval
        running--;
        runs++;
      },
      { everyMs: 5, unref: false },
    );
    await sleep(250);
    loop.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(most).toBe(1);
  });

  it("goes on after a failed run and reports the error", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const loop = repeat(
      () => {
        runs++;
        if (runs === 1) throw new Error("boom");
      },
      { everyMs: 5, onError: (err) => errors.push(err), unref: false },
    );
    await sleep(100);
    loop.stop();
    expect(errors).toHaveLength(1);
    expect(runs).toBeGreaterThan(1);
  });

  it("runs nothing after stop", async () => {
    let runs = 0;
    const loop = repeat(() => void runs++, { everyMs: 5, unref: false });
    loop.stop();
    await sleep(50);
    expect(runs).toBe(0);
  });
});
