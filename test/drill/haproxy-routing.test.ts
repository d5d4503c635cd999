// The load balancer rule docs/production.md's "Load balancer" section gives (and the drill uses): every
// request of one migration's resumable upload (the tus creation POST, then its HEAD, PATCH
// and DELETE under the upload's own URL) reaches the replica that holds the upload's file;
// different migrations spread over the replicas; everything else is balanced by load.
// Real HAProxy in front of three small HTTP servers that say which one answered.
import { createServer, type Server } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../setup/global-setup.ts";
import { startHaproxy, type Haproxy } from "./haproxy.ts";

let dir = "";
let haproxy: Haproxy;
const replicas: Server[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-haproxy-routing-"));
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const server = createServer((req, res) => {
      req.resume();
      res.setHeader("x-replica", String(i));
      res.end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    replicas.push(server);
    ports.push((server.address() as { port: number }).port);
  }
  haproxy = await startHaproxy({ port: await freePort(), extraBinds: [], replicaPorts: ports, dir });
}, 60_000);
afterAll(async () => {
  await haproxy?.stop();
  for (const s of replicas) await new Promise((r) => s.close(r));
  await rm(dir, { recursive: true, force: true });
});

const replicaFor = async (method: string, url: string) => (await fetch(`${haproxy.url}${url}`, { method })).headers.get("x-replica");

describe("HAProxy routing of resumable uploads", () => {
  it("sends all of one migration's upload requests to one replica, and spreads migrations", async () => {
    const chosen = new Set<string | null>();
    for (let m = 0; m < 12; m++) {
      const migration = randomUUID();
      const base = `/api/v1/migrations/${migration}/upload/tus`;
      const upload = `${base}/${migration}.${randomUUID().replaceAll("-", "")}`;
      const seen = new Set<string | null>();
      seen.add(await replicaFor("POST", base));
      for (let k = 0; k < 4; k++) {
        seen.add(await replicaFor("HEAD", upload));
        seen.add(await replicaFor("PATCH", upload));
      }
      seen.add(await replicaFor("DELETE", upload));
      expect([...seen], migration).toHaveLength(1);
      chosen.add([...seen][0]!);
    }
    expect(chosen.size).toBeGreaterThan(1);
  });

  it("balances other requests over the replicas", async () => {
    const seen = new Set<string | null>();
    for (let k = 0; k < 12; k++) seen.add(await replicaFor("GET", `/api/v1/migrations/${randomUUID()}`));
    expect(seen.size).toBeGreaterThan(1);
  });
});
