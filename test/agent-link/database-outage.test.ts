// The agent link while PostgreSQL is unreachable: the control plane's connections to it go
// through a TCP proxy the test cuts (no mock: the pool really loses its connections and
// cannot make new ones). A short outage holds the links (their acks wait), a long one drops
// them, and a link that ends meanwhile has its session ended once the database is back.
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import type { TestDatabase } from "../support/database.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { databaseBehindProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { waitUntil } from "../support/wait.ts";

/** The hold this test gives the replica (the default is 20 s). */
const STORE_RETRY_MS = 4_000;

let db: TestDatabase;
let proxy: TcpProxy;
let cp: TestControlPlane;
let direct: pg.Pool;
let base: string;

beforeAll(async () => {
  let url: string;
  ({ db, proxy, url } = await databaseBehindProxy());
  cp = await startControlPlane({ url, listen: true, agentLimits: { storeRetryMs: STORE_RETRY_MS } });
  const a = cp.app.server.address();
  if (!a || typeof a !== "object") throw new Error("not listening");
  base = `http://127.0.0.1:${a.port}`;
  // The test reads what was stored past the proxy.
  direct = new pg.Pool({ connectionString: db.url, max: 2 });
});
// A failed test must not leave the next one without its database.
afterEach(() => proxy?.restore());
afterAll(async () => {
  await cp?.close();
  await proxy?.close();
  await direct?.end();
  await db?.drop();
});

async function connectedAgent(): Promise<{ sim: SimAgent; serverId: string }> {
  const org = await createDemoOrganization(cp.database.db, cp.app.services, { name: `Outage ${Math.random()}` });
  const { token } = await cp.app.services.enrollment.newToken(org.organization_id, org.server_id, null);
  const sim = new SimAgent({ baseUrl: base, token });
  await sim.enroll();
  await sim.connect();
  await sim.sendAcked(sim.logs(1, "before"));
  return { sim, serverId: sim.identity.server_id };
}

const storedSeqs = async (serverId: string) =>
  (await direct.query<{ seq: string }>("select seq from agent_events where server_id = $1 order by seq", [serverId])).rows.map((r) => Number(r.seq));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("agent links while the database is unreachable", () => {
  it("a short outage holds the link: the batch is acknowledged once the database is back, stored once, and the link never drops", async () => {
    const { sim, serverId } = await connectedAgent();
    proxy.cut();
    sim.sendEvents(sim.logs(3, "during the outage"));
    await sleep(1_500);
    // Not stored, so not acknowledged; but the link stays.
    expect(sim.ackedUpTo).toBe(1);
    expect(sim.closes).toEqual([]);
    proxy.restore();
    await sim.until(() => sim.ackedUpTo === 4, 10_000, "the batch's ack");
    expect(sim.closes).toEqual([]);
    expect(await storedSeqs(serverId)).toEqual([1, 2, 3, 4]);
    sim.close();
  });

  it("an outage longer than the hold drops the link (1001); resent after the reconnect, the batch is stored once", async () => {
    const { sim, serverId } = await connectedAgent();
    proxy.cut();
    const cutAt = Date.now();
    const batch = sim.logs(2, "during a long outage");
    sim.sendEvents(batch);
    await sim.until(() => sim.closes.length > 0, STORE_RETRY_MS + 5_000, "the link to be dropped");
    expect(sim.closes).toEqual([1001]);
    // Held for the retry window, not dropped at the first failure.
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(STORE_RETRY_MS - 2_000);
    expect(sim.ackedUpTo).toBe(1);
    proxy.restore();
    // The agent comes back and resends what was never acknowledged.
    await waitUntil("the agent to reconnect", async () => (await sim.connect().then(() => true, () => false)), { timeoutMs: 15_000, intervalMs: 250 });
    await sim.sendAcked(batch);
    expect(await storedSeqs(serverId)).toEqual([1, 2, 3]);
    sim.close();
  });

  it("a link that ends during the outage has its session ended, and its server shown offline, once the database is back", async () => {
    const { sim, serverId } = await connectedAgent();
    const session = async () => (await direct.query("select connection_id from agent_sessions where server_id = $1", [serverId])).rowCount;
    const status = async () => (await direct.query<{ status: string }>("select status from servers where id = $1", [serverId])).rows[0]!.status;
    expect(await session()).toBe(1);
    proxy.cut();
    sim.close();
    await sleep(1_000);
    // The row could not be deleted yet.
    expect(await session()).toBe(1);
    proxy.restore();
    await waitUntil("the session to end and the server to go offline", async () => (await session()) === 0 && (await status()) === "offline", {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });
});
