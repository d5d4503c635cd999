// /readyz against a real database, and against one the control plane cannot reach: its
// connections go through a TCP proxy the test cuts (no mock: the pool really fails to connect).
import { afterAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import type { TestDatabase } from "../support/database.ts";
import { databaseBehindProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { waitFor } from "../support/wait.ts";

const started: TestControlPlane[] = [];
let proxy: TcpProxy | undefined;
let proxied: TestDatabase | undefined;
afterAll(async () => {
  proxy?.restore();
  for (const cp of started) await cp.close();
  await proxy?.close();
  await proxied?.drop();
});

describe("/readyz", () => {
  it("is ready when the database and the job queue answer; /healthz asks nothing", async () => {
    const cp = await startControlPlane();
    started.push(cp);
    const res = await cp.app.inject({ method: "GET", url: "/readyz" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ok", checks: { database: "ok", jobs: "ok" } });
    expect((await cp.app.inject({ method: "GET", url: "/healthz" })).json()).toEqual({ status: "ok" });
  });

  it("answers 503 naming the database (and the queue that lives in it) while the database is unreachable, and recovers", async () => {
    let url: string;
    ({ db: proxied, proxy, url } = await databaseBehindProxy());
    const cp = await startControlPlane({ url });
    started.push(cp);
    expect((await cp.app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);

    proxy.cut();
    const down = await cp.app.inject({ method: "GET", url: "/readyz" });
    expect(down.statusCode).toBe(503);
    const body = down.json();
    expect(body).toMatchObject({ status: "unavailable", checks: { database: "failed", jobs: "failed" } });
    expect(body.reasons.database).toEqual(expect.any(String));
    expect(body.reasons.database.length).toBeGreaterThan(0);
    expect(body.reasons.jobs).toEqual(expect.any(String));
    // Liveness does not depend on the database.
    expect((await cp.app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);

    // Ready again once the pool has reconnected (a busy machine may need more than one try).
    proxy.restore();
    await waitFor(async () => (await cp.app.inject({ method: "GET", url: "/readyz" })).statusCode === 200, 20_000, 250);
  });
});
