// Server-side request forgery through outgoing webhooks, as an attacker with an API key would
// try it: a receiver on loopback written into the URL is refused at creation; a name that
// resolves to loopback is refused at delivery, recorded with a generic message, and the
// local server sees no connection at all; the operator's allow-list (BERTH_OUTBOUND_ALLOW,
// here the app's outboundAllow option) lets a self-hosted receiver through. Host names are
// answered by a test resolver: nothing is looked up or sent beyond this machine.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Resolver } from "../../apps/control-plane/src/lib/outbound/request-guard.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { waitFor } from "../support/wait.ts";
import { freshOrganization } from "./fixtures.ts";

const LOOPBACK_NAMES: Record<string, string> = { "hooks.attacker.io": "127.0.0.1", "hooks.internal": "127.0.0.1" };
const testResolver: Resolver = async (name) => {
  const address = LOOPBACK_NAMES[name];
  if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
  return [{ address, family: 4 }];
};

/** The local target: counts TCP connections (whatever comes over them) and requests. */
let target: Server;
let port: number;
let connections = 0;
const paths: string[] = [];

let strict: TestControlPlane; // allow-list: hooks.internal only
let open: TestControlPlane; // allow-list: 127.0.0.1
beforeAll(async () => {
  target = createServer((req, res) => {
    paths.push(req.url ?? "");
    req.resume();
    req.on("end", () => res.end("internal secret: db password is hunter2"));
  });
  target.on("connection", () => connections++);
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
  port = (target.address() as AddressInfo).port;
  strict = await startControlPlane({ outboundAllow: ["hooks.internal"], outboundResolver: testResolver, jobs: { pollingIntervalSeconds: 0.5 } });
  open = await startControlPlane({ outboundAllow: ["127.0.0.1"], outboundResolver: testResolver, jobs: { pollingIntervalSeconds: 0.5 } });
});
afterAll(async () => {
  await strict?.close();
  await open?.close();
  target.closeAllConnections();
  await new Promise<void>((r) => target.close(() => r()));
});

/** A subscription of a new organisation to environment changes, and a way to make one happen. */
async function subscribe(cp: TestControlPlane, url: string) {
  const { d, rw } = await freshOrganization(cp);
  await cp.app.services.webhookDeliveries.fanOut(); // past the new organisation's own events: only the change below is delivered
  const res = await rw.post("/webhooks", { url, events: ["environment.status_changed"] });
  return {
    res,
    rw,
    changeEnvironment: () => cp.database.pool.query("update environments set status = 'error' where id = $1", [d.environments.stopped]),
    stored: async () => (await cp.database.pool.query("select status from webhook_deliveries where subscription_id = $1", [res.body.id])).rows as { status: string }[],
  };
}

describe("webhooks to internal addresses", () => {
  it.each(["http://127.0.0.1:PORT/steal", "https://127.0.0.1:PORT/steal", "http://[::1]:PORT/steal", "http://localhost:PORT/steal", "http://hooks.attacker.io:PORT/steal"])(
    "%s is refused at creation without the allow-list",
    async (template) => {
      const { res } = await subscribe(strict, template.replace("PORT", String(port)));
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_webhook_url");
      expect(connections).toBe(0);
    },
  );

  it("a name resolving to loopback is refused at delivery: a generic error, no retry, and the target sees no connection", async () => {
    const sub = await subscribe(strict, `https://hooks.attacker.io:${port}/steal`);
    expect(sub.res.status).toBe(201); // a public-looking name: judged when delivering
    await sub.changeEnvironment();
    await waitFor(async () => (await sub.stored())[0]?.status === "failed", 15_000, 100);

    const list = await sub.rw.get(`/webhooks/${sub.res.body.id}/deliveries`);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({
      status: "failed",
      attempts: 1,
      error: "refused: the receiver's address is not allowed",
      response_status: null,
      response_body: null,
    });
    expect(JSON.stringify(list.body)).not.toMatch(/127\.0\.0\.1|loopback|ECONN|hunter2/);
    await new Promise((r) => setTimeout(r, 1500)); // no retry comes
    expect((await sub.rw.get(`/webhooks/${sub.res.body.id}/deliveries`)).body.data[0].attempts).toBe(1);
    expect(connections).toBe(0);
    expect(paths).toEqual([]);
  });

  it("a receiver on the allow-list is delivered to: by listed name, and by listed address", async () => {
    const byName = await subscribe(strict, `http://hooks.internal:${port}/by-name`);
    expect(byName.res.status).toBe(201);
    await byName.changeEnvironment();
    await waitFor(async () => (await byName.stored())[0]?.status === "succeeded", 15_000, 100);

    const byAddress = await subscribe(open, `http://127.0.0.1:${port}/by-address`);
    expect(byAddress.res.status).toBe(201);
    await byAddress.changeEnvironment();
    await waitFor(async () => (await byAddress.stored())[0]?.status === "succeeded", 15_000, 100);

    expect(paths).toEqual(["/by-name", "/by-address"]);
    const [d] = (await byAddress.rw.get(`/webhooks/${byAddress.res.body.id}/deliveries`)).body.data;
    expect(d).toMatchObject({ status: "succeeded", response_status: 200, error: null });
    // The allow-list is per control plane: the other one still refuses that address.
    expect((await subscribe(strict, `http://127.0.0.1:${port}/by-address`)).res.status).toBe(400);
  });
});
