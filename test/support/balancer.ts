// A small TCP load balancer the test controls, standing in for HAProxy in front of several
// control-plane replicas: it asks each upstream's GET /readyz every `checkMs` and sends each
// new connection to the first upstream whose last answer was 200 (none: the connection is
// dropped). Connections already open stay where they are, as with HAProxy.
import net from "node:net";
import { splice } from "./tcp-proxy.ts";

export interface Balancer {
  port: number;
  url: string;
  /** Each upstream's health transitions, in order: [port, status code or 0 when it did not answer, body]. */
  readonly transitions: [number, number, string][];
  /** Where each accepted connection went (port), in order. */
  readonly routed: number[];
  close(): Promise<void>;
}

export async function startBalancer(upstreams: readonly number[], checkMs = 50): Promise<Balancer> {
  const healthy = new Map<number, boolean>(upstreams.map((p) => [p, false]));
  const last = new Map<number, number>();
  const transitions: [number, number, string][] = [];
  const routed: number[] = [];
  const sockets = new Set<net.Socket>();
  let stopped = false;

  async function check(port: number) {
    let status = 0;
    let body = "";
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) });
      status = res.status;
      body = await res.text();
    } catch {
      // Not answering: down.
    }
    healthy.set(port, status === 200);
    if (last.get(port) !== status) {
      last.set(port, status);
      transitions.push([port, status, body]);
    }
  }
  const checks = (async () => {
    while (!stopped) {
      await Promise.all(upstreams.map(check));
      await new Promise((r) => setTimeout(r, checkMs));
    }
  })();
  await Promise.all(upstreams.map(check));

  const server = net.createServer((client) => {
    const target = upstreams.find((p) => healthy.get(p));
    if (target === undefined) return client.destroy();
    routed.push(target);
    splice(client, net.connect(target, "127.0.0.1"), sockets);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    transitions,
    routed,
    async close() {
      stopped = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await checks;
    },
  };
}
