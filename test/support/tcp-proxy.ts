// A TCP proxy the test controls, to cut and restore the agent's link for real.
import net from "node:net";
import { createTestDatabase, type TestDatabase } from "./database.ts";

export interface TcpProxy {
  port: number;
  /** Drops every open connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Joins a client's connection to its upstream both ways, each tracked in `sockets` while open; one closing closes the other. */
export function splice(client: net.Socket, upstream: net.Socket, sockets: Set<net.Socket>): void {
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
  }
  client.pipe(upstream).pipe(client);
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let up = true;
  const server = net.createServer((client) => {
    if (!up) return client.destroy();
    splice(client, net.connect(targetPort, "127.0.0.1"), sockets);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address() as net.AddressInfo;
  return {
    port: addr.port,
    cut() {
      up = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      up = true;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * A fresh test database that the control plane reaches through a proxy the test can cut:
 * `url` goes through the proxy, `db.url` straight to PostgreSQL (for the test's own reads).
 */
export async function databaseBehindProxy(): Promise<{ db: TestDatabase; proxy: TcpProxy; url: string }> {
  const db = await createTestDatabase();
  const proxy = await startTcpProxy(Number(new URL(db.url).port));
  const through = new URL(db.url);
  through.hostname = "127.0.0.1";
  through.port = String(proxy.port);
  return { db, proxy, url: through.toString() };
}
