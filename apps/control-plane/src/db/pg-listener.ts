// A dedicated connection for LISTEN, reconnecting when it drops. NOTIFY is how a replica
// that writes a command or an event wakes the replica that holds the agent or the stream.
import pg from "pg";

export interface PgListener {
  close(): Promise<void>;
}

export async function listen(
  pool: pg.Pool,
  channels: string[],
  onNotify: (channel: string, payload: string) => void,
  log: (msg: string, err?: unknown) => void,
): Promise<PgListener> {
  let client: pg.Client | null = null;
  let closed = false;

  // Its own connection, not one of the pool's: a LISTEN connection is held forever.
  async function connect(): Promise<void> {
    const c = new pg.Client((pool as unknown as { options: pg.ClientConfig }).options);
    await c.connect();
    c.on("notification", (n) => onNotify(n.channel, n.payload ?? ""));
    c.on("error", (err) => {
      log("listen connection lost; reconnecting", err);
      void c.end().catch(() => {});
      if (client === c) client = null;
      if (!closed) setTimeout(() => void reconnect(), 500).unref();
    });
    for (const ch of channels) await c.query(`listen "${ch}"`);
    client = c;
  }
  async function reconnect(): Promise<void> {
    while (!closed && !client) {
      try {
        await connect();
      } catch (err) {
        log("listen reconnect failed", err);
        await new Promise((r) => setTimeout(r, 1000).unref());
      }
    }
  }

  await connect();
  return {
    async close() {
      closed = true;
      const c = client;
      client = null;
      if (c) {
        await c.query("unlisten *").catch(() => {});
        await c.end().catch(() => {});
      }
    },
  };
}
