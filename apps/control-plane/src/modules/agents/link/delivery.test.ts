import { describe, expect, it } from "vitest";
import type { Connection } from "./connection.ts";
import { createDelivery } from "./delivery.ts";

describe("command delivery on a NOTIFY", () => {
  it("an outbox that cannot be read (PostgreSQL restarting) is logged, not an unhandled rejection that ends the process", async () => {
    const warnings: { o: object; m: string }[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const conn = { serverId: "s1", ready: true, delivered: new Set<string>(), readsInFlight: new Set<Set<string>>() } as unknown as Connection;
      const delivery = createDelivery({
        commands: {
          deliverable: () => Promise.reject(new Error("Connection terminated unexpectedly")),
          unsentServers: () => Promise.resolve([]),
          markAccepted: () => Promise.resolve(null),
          markRejected: () => Promise.resolve(),
          setDirectDelivery: () => {},
        },
        live: new Map([["s1", conn]]),
        outboxSweepMs: 60_000,
        log: { warn: (o, m) => warnings.push({ o, m }) },
      });
      delivery.onCommandNotice("s1:c1");
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
      expect(warnings).toMatchObject([{ m: "command delivery deferred: the outbox could not be read", o: { serverId: "s1" } }]);
      expect(conn.readsInFlight.size).toBe(0);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
