// Reconnect delays: capped, jittered, and reset only when asked.
import { describe, expect, it } from "vitest";
import { ceilingFor, createBackoff } from "./backoff.ts";

/** mulberry32: a small seeded generator, so a failing sequence can be replayed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

describe("backoff", () => {
  it("doubles its ceiling from 1 s up to the 60 s cap", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map((n) => ceilingFor(n, 1_000, 60_000))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });

  it("draws every delay between 0 and the current ceiling, never above the cap", () => {
    const backoff = createBackoff({ random: seeded(42) });
    const delays = Array.from({ length: 200 }, () => backoff.next());
    delays.forEach((delay, attempt) => {
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(ceilingFor(attempt, 1_000, 60_000));
    });
    expect(Math.max(...delays)).toBeLessThan(60_000);
    // Jittered: once at the cap, delays spread over the window instead of repeating.
    const capped = delays.slice(10);
    expect(new Set(capped).size).toBeGreaterThan(150);
    expect(Math.min(...capped)).toBeLessThan(15_000);
    expect(Math.max(...capped)).toBeGreaterThan(45_000);
  });

  it("is reproducible for a seed and differs between seeds", () => {
    const run = (seed: number) => {
      const backoff = createBackoff({ random: seeded(seed) });
      return Array.from({ length: 10 }, () => backoff.next());
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
    expect(run(7)).toMatchInlineSnapshot(`
      [
        11,
        123,
        3907,
        5592,
        8343,
        12976,
        27973,
        14395,
        33199,
        43789,
      ]
    `);
  });

  it("returns to the first ceiling on reset, and jumps to the cap on toMax", () => {
    const backoff = createBackoff({ random: () => 0.999 });
    for (let i = 0; i < 10; i++) backoff.next();
    expect(backoff.next()).toBe(59_940);
    backoff.reset();
    expect(backoff.next()).toBe(999);
    expect(backoff.next()).toBe(1_998);
    backoff.toMax();
    expect(backoff.next()).toBe(59_940);
  });
});
