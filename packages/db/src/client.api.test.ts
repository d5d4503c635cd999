// A client in use when PostgreSQL drops its connection (a restart, a failover) fails its
// query; it must not take the process down with an uncaught 'error' event.
import pg from "pg";
import { afterAll, expect, inject, it } from "vitest";
import { createDb } from "./client.ts";

// The run's PostgreSQL (test/setup/global-setup.ts provides it; declared here too, as this
// workspace's typecheck does not read the test folder).
declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

const handle = createDb(inject("pgAdminUrl"), { max: 2 });
afterAll(() => handle.close());

it("a checked-out client whose server connection is terminated fails its query and the pool serves the next one", async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on("uncaughtException", onUncaught);
  try {
    const client = await handle.pool.connect();
    const { rows } = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
    const killer = new pg.Client({ connectionString: inject("pgAdminUrl") });
    await killer.connect();
    await killer.query("select pg_terminate_backend($1)", [rows[0]!.pid]);
    await killer.end();
    // The client learns of it while still checked out (between queries, as a job's held connection would).
    await new Promise((r) => setTimeout(r, 300));
    await expect(client.query("select 1")).rejects.toThrow();
    client.release(true);
    expect(uncaught).toEqual([]);
    const again = await handle.pool.query<{ one: number }>("select 1 as one");
    expect(again.rows[0]!.one).toBe(1);
  } finally {
    process.off("uncaughtException", onUncaught);
  }
});
