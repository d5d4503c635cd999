import { describe, expect, it } from "vitest";
import { HANDSHAKE_TIMEOUT_MS, livenessVerdict, seenSpacingMs, sweepEveryMs } from "./liveness.ts";

const heartbeatMs = 1_000;
const now = 1_000_000;
const link = (over: { serverId?: string | null; acceptedAt?: number; lastFrameAt?: number } = {}) => ({
  serverId: "a3f1c2de-0000-4000-8000-000000000001",
  acceptedAt: now - 60_000,
  lastFrameAt: now,
  ...over,
});

describe("livenessVerdict", () => {
  it("keeps a link heard from within two heartbeat intervals, however old", () => {
    expect(livenessVerdict(link({ lastFrameAt: now - 2 * heartbeatMs }), now, heartbeatMs)).toBeNull();
  });

  it("drops a link silent for more than two heartbeat intervals", () => {
    expect(livenessVerdict(link({ lastFrameAt: now - 2 * heartbeatMs - 1 }), now, heartbeatMs)).toBe("heartbeat_timeout");
  });

  it("drops a handshake unfinished after the handshake timeout, even one that keeps sending", () => {
    const handshaking = link({ serverId: null, lastFrameAt: now });
    expect(livenessVerdict({ ...handshaking, acceptedAt: now - HANDSHAKE_TIMEOUT_MS }, now, heartbeatMs)).toBeNull();
    expect(livenessVerdict({ ...handshaking, acceptedAt: now - HANDSHAKE_TIMEOUT_MS - 1 }, now, heartbeatMs)).toBe("handshake_timeout");
  });

  it("drops a silent handshake at the heartbeat limit too, before the handshake timeout", () => {
    expect(livenessVerdict(link({ serverId: null, acceptedAt: now - 3_000, lastFrameAt: now - 3_000 }), now, heartbeatMs)).toBe("heartbeat_timeout");
  });
});

describe("sweepEveryMs", () => {
  it("sweeps at half the shorter limit, never more often than every 100 ms", () => {
    expect(sweepEveryMs(15_000)).toBe(HANDSHAKE_TIMEOUT_MS / 2);
    expect(sweepEveryMs(1_000)).toBe(500);
    expect(sweepEveryMs(50)).toBe(100);
  });
});

describe("seenSpacingMs", () => {
  it("sends a round of one statement at once", () => {
    expect(seenSpacingMs(1, 5_000)).toBe(0);
    expect(seenSpacingMs(100, 5_000)).toBe(0);
  });

  it("spreads a large round over most of the interval, at most 250 ms apart", () => {
    // 10,000 agents: 100 statements, 40 ms apart, 4 s of a 5 s interval.
    expect(seenSpacingMs(10_000, 5_000)).toBe(40);
    expect(seenSpacingMs(101, 5_000)).toBe(250);
  });
});
