import { describe, expect, it } from "vitest";
import type { Connection } from "./connection.ts";
import { PAUSE_ABOVE, RESUME_AT, enqueue, type QueueStats } from "./frame-queue.ts";

function link() {
  const socket = {
    isPaused: false,
    pause() {
      this.isPaused = true;
    },
    resume() {
      this.isPaused = false;
    },
  };
  const conn = { socket, queue: Promise.resolve(), queued: 0 } as unknown as Connection;
  const stats: QueueStats = { pauses: 0, peakQueued: 0 };
  return { conn, socket, stats };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("frame queue", () => {
  it("handles frames in order, and pauses reading while more than PAUSE_ABOVE wait, until RESUME_AT", async () => {
    const { conn, socket, stats } = link();
    const done: number[] = [];
    const gates: (() => void)[] = [];
    const frame = (i: number) => () => new Promise<void>((resolve) => gates.push(() => (done.push(i), resolve())));
    for (let i = 0; i < PAUSE_ABOVE; i++) enqueue(conn, frame(i), () => {}, stats);
    expect(socket.isPaused).toBe(false);
    enqueue(conn, frame(PAUSE_ABOVE), () => {}, stats);
    expect(socket.isPaused).toBe(true);
    expect(stats).toEqual({ pauses: 1, peakQueued: PAUSE_ABOVE + 1 });
    // Frames still parsed from what was read already are queued while paused, without a second pause.
    enqueue(conn, frame(PAUSE_ABOVE + 1), () => {}, stats);
    expect(stats.pauses).toBe(1);

    const total = PAUSE_ABOVE + 2;
    while (conn.queued > RESUME_AT) {
      expect(socket.isPaused).toBe(true);
      await tick();
      gates.shift()?.();
      await tick();
    }
    expect(socket.isPaused).toBe(false);
    while (conn.queued > 0) {
      await tick();
      gates.shift()?.();
      await tick();
    }
    expect(done).toEqual(Array.from({ length: total }, (_, i) => i));
  });

  it("a failed frame goes to onError and the next one still runs", async () => {
    const { conn, stats } = link();
    const errors: unknown[] = [];
    let ran = false;
    enqueue(conn, () => Promise.reject(new Error("boom")), (err) => errors.push(err), stats);
    enqueue(conn, () => void (ran = true), (err) => errors.push(err), stats);
    await conn.queue;
    expect(errors).toHaveLength(1);
    expect(ran).toBe(true);
    expect(conn.queued).toBe(0);
  });
});
