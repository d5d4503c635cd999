import net from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable, retryWhileDatabaseUnavailable } from "./database-unavailable.ts";

/** An error as node-postgres raises it for a server's ErrorResponse. */
const sqlError = (code: string, message = "x") => Object.assign(new pg.DatabaseError(message, 0, "error"), { code });

describe("isDatabaseUnavailable", () => {
  it("names a database that is down, restarting or out of connections, and nothing the statement did", async () => {
    // A real refused connection: a port nothing listens on.
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((r) => server.close(r));
    const refused = await new pg.Client({ host: "127.0.0.1", port, user: "x" }).connect().then(
      () => null,
      (err: unknown) => err,
    );
    expect(isDatabaseUnavailable(refused)).toBe(true);
    for (const code of ["57P01", "57P02", "57P03", "53300", "08006", "08001"]) expect(isDatabaseUnavailable(sqlError(code)), code).toBe(true);
    expect(isDatabaseUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isDatabaseUnavailable(new Error("Client has encountered a connection error and is not queryable"))).toBe(true);
    // As drizzle raises it: its own error, the driver's as the cause.
    expect(isDatabaseUnavailable(new Error("Failed query: select 1", { cause: new Error("Connection terminated unexpectedly") }))).toBe(true);
    expect(isDatabaseUnavailable(new Error("Failed query: insert", { cause: sqlError("23505") }))).toBe(false);
    for (const code of ["23505", "42601", "40001", "22P02", "57014"]) expect(isDatabaseUnavailable(sqlError(code)), code).toBe(false);
    expect(isDatabaseUnavailable(new Error("server 1 does not exist"))).toBe(false);
    expect(isDatabaseUnavailable("ECONNREFUSED")).toBe(false);
  });
});

describe("retryWhileDatabaseUnavailable", () => {
  it("tries again while the database is unreachable, and returns the first success", async () => {
    let calls = 0;
    const waits: unknown[] = [];
    const result = await retryWhileDatabaseUnavailable(
      async () => {
        calls++;
        if (calls < 3) throw sqlError("57P03");
        return "stored";
      },
      { forMs: 5_000, onWait: (err) => waits.push(err) },
    );
    expect(result).toBe("stored");
    expect(calls).toBe(3);
    expect(waits).toHaveLength(1);
  });

  it("throws at once an error that is not the database's absence, and the last one when time or keepTrying runs out", async () => {
    let calls = 0;
    const refused = sqlError("23505");
    await expect(retryWhileDatabaseUnavailable(async () => (calls++, Promise.reject(refused)), { forMs: 5_000 })).rejects.toBe(refused);
    expect(calls).toBe(1);

    calls = 0;
    const started = Date.now();
    await expect(retryWhileDatabaseUnavailable(async () => (calls++, Promise.reject(sqlError("57P01"))), { forMs: 600 })).rejects.toMatchObject({ code: "57P01" });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(calls).toBeGreaterThan(1);

    calls = 0;
    await expect(retryWhileDatabaseUnavailable(async () => (calls++, Promise.reject(sqlError("57P01"))), { forMs: 5_000, keepTrying: () => calls < 2 })).rejects.toMatchObject({
      code: "57P01",
    });
    expect(calls).toBe(2);
  });
});
