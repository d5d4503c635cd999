import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../clock.ts";
import { abortAfter, waitForHealth } from "./health-check.ts";

// Garbage collections on demand, as a busy agent has them all the time.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

/** An ERP that accepts connections and never answers. */
async function silentServer(): Promise<number> {
  server = createServer(() => {});
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** An ERP whose HTTP server is up but whose registry failed to load, as Odoo serves then. */
async function brokenRegistry(): Promise<number> {
  server = createServer((req, res) => {
    if (req.url?.startsWith("/web/health")) res.writeHead(200, { "content-type": "application/json" }).end('{"status": "pass"}');
    else res.writeHead(500, { "content-type": "text/html" }).end("Internal Server Error");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

describe("waitForHealth", () => {
  it("is not fooled by /web/health: an ERP whose registry failed to load is not healthy", async () => {
    const port = await brokenRegistry();
    const outcome = await waitForHealth({ hostPort: port, timeoutMs: 500, intervalMs: 100, signal: new AbortController().signal, clock: systemClock, stoppedReason: async () => null });
    expect(outcome).toMatchObject({ healthy: false, reason: expect.stringContaining("GET /web/login answered 500") });
  });

  it("gives up on an ERP that never answers, however often the heap is collected meanwhile", async () => {
    const port = await silentServer();
    const collecting = setInterval(gc, 50);
    try {
      const started = Date.now();
      const outcome = await waitForHealth({
        hostPort: port,
        timeoutMs: 1_000,
        intervalMs: 100,
        signal: new AbortController().signal,
        clock: systemClock,
        stoppedReason: async () => null,
      });
      expect(outcome).toMatchObject({ healthy: false, attempts: 1, reason: expect.stringContaining("not healthy after 1 s") });
      // One attempt: its own 3 s limit, not a wait without end.
      expect(Date.now() - started).toBeLessThan(6_000);
    } finally {
      clearInterval(collecting);
    }
  }, 15_000);

  it("stops at once when the step is cancelled", async () => {
    const port = await silentServer();
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(new Error("cancelled")), 200);
    const started = Date.now();
    await expect(
      waitForHealth({ hostPort: port, timeoutMs: 10_000, intervalMs: 100, signal: cancel.signal, clock: systemClock, stoppedReason: async () => null }),
    ).rejects.toThrow("cancelled");
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("abortAfter", () => {
  it("aborts after the time with a TimeoutError, or with the parent's reason, and not at all once cleared", async () => {
    const timed = abortAfter(50, new AbortController().signal);
    await new Promise((r) => setTimeout(r, 120));
    expect(timed.signal.reason).toMatchObject({ name: "TimeoutError" });

    const parent = new AbortController();
    const followed = abortAfter(10_000, parent.signal);
    parent.abort(new Error("stop"));
    expect(followed.signal.reason).toEqual(new Error("stop"));
    followed.clear();

    const cleared = abortAfter(50, new AbortController().signal);
    cleared.clear();
    await new Promise((r) => setTimeout(r, 120));
    expect(cleared.signal.aborted).toBe(false);
  });
});
