// The control plane's end of the agent link, driven by a protocol-level agent over real
// HTTP and WebSocket connections: enrolment, handshake, commands, events, replicas.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { randomUUID } from "node:crypto";
import { CLOSE_CODES, generateKeyPair, type UnsignedCommand } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { waitFor } from "../support/wait.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { TAKEOVER_CHANNEL } from "../../apps/control-plane/src/modules/agents/channels.ts";

let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;

function urlOf(t: TestControlPlane) {
  const a = t.app.server.address();
  if (!a || typeof a !== "object") throw new Error("not listening");
  return `http://127.0.0.1:${a.port}`;
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, outboxSweepMs: 500 });
  base = urlOf(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
});
afterAll(async () => cp?.close());

// A fresh key per call keeps the per-key rate limit out of the way without moving the
// clock (commands carry issued_at, and the agent refuses ones from the future).
const freshKey = async (access: "read_only" | "full_access") =>
  (await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access, name: "t", createdBy: null })).key;

async function newServer(name = "srv") {
  const res = await publicClient(cp.app, await freshKey("full_access")).post("/servers", { name, provider: "hetzner" });
  expect(res.status).toBe(201);
  return res.body as { server: { id: string; status: string }; enrollment: { token: string; install_command: string } };
}

async function serverView(id: string) {
  return (await publicClient(cp.app, await freshKey("read_only")).get(`/servers/${id}`)).body;
}

async function enrolled(onCommand?: ConstructorParameters<typeof SimAgent>[0]["onCommand"]) {
  const created = await newServer();
  const agent = new SimAgent({ baseUrl: base, token: created.enrollment.token, ...(onCommand ? { onCommand } : {}) });
  await agent.enroll();
  return agent;
}

const commandRow = async (id: string) =>
  (await cp.database.pool.query("select state, result, error, rejection_code, issued_by from agent_commands where command_id = $1", [id])).rows[0];

describe("enrolment", () => {
  it("a new server is pending with a one-time token and an install command", async () => {
    const created = await newServer("web-1");
    expect(created.server.status).toBe("pending");
    expect(created.enrollment.token).toMatch(/^berth_enr_/);
    expect(created.enrollment.install_command).toContain(`--token ${created.enrollment.token}`);
    // install.sh carries its control plane's URL; --key is the release-signing key it verifies the executable with.
    expect(created.enrollment.install_command).toMatch(/^curl -fsSL http:\/\/[^/]+\/install\.sh \| sudo sh -s -- --key [A-Za-z0-9+/]{43}= --token /);
  });

  it("the token gives the server id and the signing keys to pin, exactly once", async () => {
    const created = await newServer();
    const agent = new SimAgent({ baseUrl: base, token: created.enrollment.token });
    const identity = await agent.enroll();
    expect(identity.server_id).toBe(created.server.id);
    expect(identity.signing_keys.length).toBeGreaterThanOrEqual(1);
    expect(identity.connect_path).toBe("/agent/v1/connect");
    const view = await serverView(created.server.id);
    expect(view).toMatchObject({ cpu_cores: 8, ram_mb: 32768, disk_gb: 500, status: "offline", agent_version: "sim-1.0.0" });
    const again = new SimAgent({ baseUrl: base, token: created.enrollment.token });
    await expect(again.enroll()).rejects.toMatchObject({ status: 401, body: { error: "enrollment_token_used" } });
  });

  it("an unknown or expired token is refused", async () => {
    await expect(new SimAgent({ baseUrl: base, token: "berth_enr_nope" }).enroll()).rejects.toMatchObject({
      status: 401,
      body: { error: "invalid_enrollment_token" },
    });
    const created = await newServer();
    cp.clock.advance(61 * 60_000);
    try {
      await expect(new SimAgent({ baseUrl: base, token: created.enrollment.token }).enroll()).rejects.toMatchObject({
        body: { error: "enrollment_token_expired" },
      });
    } finally {
      cp.clock.advance(-61 * 60_000);
    }
  });
});

describe("handshake and status", () => {
  it("a signed hello gets ready; the server is online while the link is up, offline after", async () => {
    const agent = await enrolled();
    const ready = await agent.connect();
    expect(ready).toMatchObject({ protocol_version: 1, heartbeat_ms: 1000, resend_from: 1 });
    expect((await serverView(agent.identity.server_id)).status).toBe("online");
    agent.close();
    await agent.until(() => agent.closes.length > 0);
    await waitFor(async () => (await serverView(agent.identity.server_id)).status === "offline");
  });

  it("a challenge signed with another key, or for an unknown server, is refused with 4001", async () => {
    const agent = await enrolled();
    await expect(agent.connect(base, { signWith: generateKeyPair() })).rejects.toMatchObject({ code: CLOSE_CODES.auth_failed });
    await expect(agent.connect(base, { serverId: crypto.randomUUID() })).rejects.toMatchObject({ code: CLOSE_CODES.auth_failed });
    expect((await serverView(agent.identity.server_id)).status).toBe("offline");
  });

  it("an agent that goes silent is dropped after two heartbeat intervals", async () => {
    const agent = await enrolled();
    await agent.connect();
    await agent.until(() => agent.closes.includes(CLOSE_CODES.heartbeat_timeout), 5000, "heartbeat close");
    await waitFor(async () => (await serverView(agent.identity.server_id)).status === "offline");
  });

  it("pings keep the link up", async () => {
    const agent = await enrolled();
    await agent.connect();
    const pinger = setInterval(() => agent.ping(), 300);
    await new Promise((r) => setTimeout(r, 3000));
    clearInterval(pinger);
    expect(agent.closes).toEqual([]);
    agent.close();
  });

  it("what the agents send moves their last_seen_at forward; a row a command holds locked is written the next round", async () => {
    const agents = await Promise.all([enrolled(), enrolled(), enrolled()]);
    for (const agent of agents) await agent.connect();
    const ids = agents.map((a) => a.identity.server_id);
    const seen = async () =>
      new Map(
        (await cp.database.pool.query<{ id: string; last_seen_at: Date }>("select id, last_seen_at from servers where id = any($1::uuid[])", [ids])).rows.map(
          (r) => [r.id, r.last_seen_at.getTime()],
        ),
      );
    const before = await seen();
    // Another transaction holds the first server's row (as issuing a command does) for a while.
    const holder = await cp.database.pool.connect();
    await holder.query("begin");
    await holder.query("select 1 from servers where id = $1 for update", [ids[0]]);
    const pinger = setInterval(() => agents.forEach((a) => a.ping()), 200);
    try {
      await waitFor(async () => {
        const now = await seen();
        return ids.slice(1).every((id) => now.get(id)! > before.get(id)!);
      }, 5000);
      expect((await seen()).get(ids[0]!)).toBe(before.get(ids[0]!));
      await holder.query("commit");
      await waitFor(async () => (await seen()).get(ids[0]!)! > before.get(ids[0]!)!, 5000);
    } finally {
      clearInterval(pinger);
      await holder.query("rollback").catch(() => {});
      holder.release();
      agents.forEach((a) => a.close());
    }
  });

  it("a late takeover notice from an older connection does not close the newer one", async () => {
    const agent = await enrolled();
    await agent.connect();
    await agent.connect();
    await agent.until(() => agent.closes.includes(CLOSE_CODES.replaced), 3000, "the first link replaced");
    // The first connection's notice, delivered late (a busy listener), after the second registered.
    await cp.database.pool.query("select pg_notify($1, $2)", [TAKEOVER_CHANNEL, `${agent.identity.server_id}:00000000-0000-0000-0000-000000000000`]);
    await new Promise((r) => setTimeout(r, 500));
    expect(agent.closes).toEqual([CLOSE_CODES.replaced]);
    expect(agent.socket!.readyState).toBe(1);
    expect((await serverView(agent.identity.server_id)).status).toBe("online");
    agent.close();
  });

  it("a second connection for the same server replaces the first", async () => {
    const agent = await enrolled();
    await agent.connect();
    const first = agent.socket!;
    const pinger = setInterval(() => agent.ping(), 300);
    await agent.connect();
    await agent.until(() => agent.closes.includes(CLOSE_CODES.replaced), 3000, "replaced close");
    expect(first.readyState).toBeGreaterThanOrEqual(2);
    expect((await serverView(agent.identity.server_id)).status).toBe("online");
    clearInterval(pinger);
    agent.close();
  });
});

describe("commands", () => {
  it("are delivered signed, accepted, and completed by a command.result event", async () => {
    const agent = await enrolled((cmd, a) =>
      a.sendEvents([{ seq: a.nextSeq++, ts: new Date().toISOString(), kind: "command.result", command_id: cmd.command_id, ok: true, result: { docker: "28.2.2" } }]),
    );
    await agent.connect();
    const row = await cp.app.services.agentCommands.issue({
      organizationId: d.organization_id,
      serverId: agent.identity.server_id,
      type: "diagnostics",
      params: {},
      issuedBy: "user:00000000-0000-4000-8000-000000000001",
    });
    await agent.until(() => agent.received.length === 1, 3000, "command");
    expect(agent.rejected).toEqual([]);
    expect(agent.received[0]).toMatchObject({ command_id: row.commandId, type: "diagnostics", seq: 1 });
    await waitFor(async () => (await commandRow(row.commandId)).state === "succeeded");
    expect(await commandRow(row.commandId)).toMatchObject({ result: { docker: "28.2.2" }, issued_by: "user:00000000-0000-4000-8000-000000000001" });
    agent.close();
  });

  it("issued on the replica that holds the agent are each sent once (the NOTIFY does not send them again)", async () => {
    const agent = await enrolled();
    await agent.connect();
    const issue = () =>
      cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId: agent.identity.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
    const rows = await Promise.all(Array.from({ length: 30 }, issue));
    await agent.until(() => agent.received.length >= 30, 5000, "30 commands");
    // Long enough for every insert's NOTIFY to have come back to this replica.
    await new Promise((r) => setTimeout(r, 300));
    expect(agent.received.map((c) => c.command_id).sort()).toEqual(rows.map((r) => r.commandId).sort());
    expect(new Set(rows.map((r) => r.seq)).size).toBe(30);
    agent.close();
  });

  it("one whose announcement was lost (written, never notified) is sent by the outbox sweep", async () => {
    const agent = await enrolled();
    await agent.connect();
    const serverId = agent.identity.server_id;
    const sign = await cp.app.services.signer.prepare();
    const issuedAt = new Date(Date.now() - 1000);
    const { rows } = await cp.database.pool.query<{ seq: string }>("update servers set last_command_seq = last_command_seq + 1 where id = $1 returning last_command_seq as seq", [serverId]);
    const signed = sign({
      command_id: randomUUID(),
      server_id: serverId,
      seq: Number(rows[0]!.seq),
      type: "diagnostics",
      issued_at: issuedAt.toISOString(),
      expires_at: new Date(issuedAt.getTime() + 60_000).toISOString(),
      issued_by: null,
      params: {},
    } as unknown as UnsignedCommand);
    await cp.database.pool.query(
      `insert into agent_commands (command_id, server_id, seq, type, signed, issued_by, created_at, expires_at)
       values ($1, $2, $3, 'diagnostics', $4, 'system:test', $5, $6)`,
      [signed.command_id, serverId, signed.seq, JSON.stringify(signed), issuedAt, signed.expires_at],
    );
    await agent.until(() => agent.received.length === 1, 3000, "the swept command");
    expect(agent.received[0]!.command_id).toBe(signed.command_id);
    agent.close();
  });

  it("issued while the agent is away are delivered when it connects; expired ones never", async () => {
    const agent = await enrolled();
    const expired = await cp.app.services.agentCommands.issue({
      organizationId: d.organization_id,
      serverId: agent.identity.server_id,
      type: "diagnostics",
      params: {},
      issuedBy: "system:test",
      ttlMs: 1,
    });
    const waiting = await cp.app.services.agentCommands.issue({
      organizationId: d.organization_id,
      serverId: agent.identity.server_id,
      type: "diagnostics",
      params: {},
      issuedBy: "system:test",
    });
    await new Promise((r) => setTimeout(r, 20));
    await agent.connect();
    await agent.until(() => agent.received.length >= 1, 3000, "queued command");
    await new Promise((r) => setTimeout(r, 200));
    expect(agent.received.map((c) => c.command_id)).toEqual([waiting.commandId]);
    expect((await commandRow(expired.commandId)).state).toBe("expired");
    agent.close();
  });

  it("an unanswered command is sent again after a reconnect", async () => {
    const agent = await enrolled();
    const silent = new SimAgent({ baseUrl: base, token: "" });
    Object.assign(silent, { identity: agent.identity, keys: agent.keys });
    // Receive without answering: replace the accept path with nothing.
    (silent as unknown as { onCommand: (c: unknown) => void }).onCommand = (c) => silent.received.push(c as never);
    await silent.connect();
    const row = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId: agent.identity.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
    await silent.until(() => silent.received.length === 1, 3000, "first delivery");
    silent.close();
    await agent.connect();
    await agent.until(() => agent.received.length === 1, 3000, "redelivery");
    expect(agent.received[0]!.command_id).toBe(row.commandId);
    await waitFor(async () => (await commandRow(row.commandId)).state === "accepted");
    agent.close();
  });

  it("a rejection by the agent is recorded with its code", async () => {
    const agent = await enrolled();
    agent.identity = { ...agent.identity, signing_keys: [] }; // pins nothing: every command is refused
    await agent.connect();
    const row = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId: agent.identity.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
    await agent.until(() => agent.rejected.length === 1, 3000, "rejection");
    await waitFor(async () => (await commandRow(row.commandId)).state === "rejected");
    expect((await commandRow(row.commandId)).rejection_code).toBe("unknown_key");
    agent.close();
  });
});

describe("events", () => {
  it("are stored once and acknowledged, however often they are resent", async () => {
    const agent = await enrolled();
    await agent.connect();
    const batch = agent.logs(10);
    agent.sendEvents(batch);
    await agent.until(() => agent.ackedUpTo === 10, 3000, "ack 10");
    agent.sendEvents(batch);
    agent.sendEvents([...batch.slice(5), ...agent.logs(3)]);
    await agent.until(() => agent.ackedUpTo === 13, 3000, "ack 13");
    const { rows } = await cp.database.pool.query("select seq from agent_events where server_id = $1 order by seq", [agent.identity.server_id]);
    expect(rows.map((r: { seq: string }) => Number(r.seq))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    agent.close();
    // After a reconnect, ready says where to resend from.
    const again = await agent.connect();
    expect(again.resend_from).toBe(14);
    agent.close();
  });

  it("an event already in agent_events above the watermark is skipped, not a stream stuck on every resend", async () => {
    const agent = await enrolled();
    await agent.connect();
    const [first, second, third] = agent.logs(3);
    agent.sendEvents([first!]);
    await agent.until(() => agent.ackedUpTo === 1, 3000, "ack 1");
    // A row the watermark does not know of (it never happens by itself: the fallback's test).
    await cp.database.pool.query(
      "insert into agent_events (server_id, seq, kind, ts, body) values ($1, 2, 'log', now(), $2)",
      [agent.identity.server_id, JSON.stringify({ ...second!, message: "stored before" })],
    );
    agent.sendEvents([second!, third!]);
    await agent.until(() => agent.ackedUpTo === 3, 3000, "ack 3");
    const { rows } = await cp.database.pool.query("select seq, body->>'message' as message from agent_events where server_id = $1 order by seq", [agent.identity.server_id]);
    expect(rows.map((r: { seq: string; message: string }) => [Number(r.seq), r.message])).toEqual([
      [1, "line"],
      [2, "stored before"],
      [3, "line"],
    ]);
    agent.close();
  });

  it("accept gaps in seqs (dropped low-priority lines) and acknowledge the highest stored", async () => {
    const agent = await enrolled();
    await agent.connect();
    const events = agent.logs(6).filter((e) => e.seq % 2 === 0);
    agent.sendEvents(events);
    await agent.until(() => agent.ackedUpTo === 6, 3000, "ack 6");
    agent.close();
  });

  it("stats become the server's usage on GET /servers", async () => {
    const agent = await enrolled();
    await agent.connect();
    agent.sendEvents([
      {
        seq: agent.nextSeq++,
        ts: new Date().toISOString(),
        kind: "stats",
        cpu_percent: 37.5,
        ram_used_mb: 2048,
        ram_total_mb: 8192,
        disk_used_gb: 40.5,
        disk_total_gb: 160,
        load1: 0.5,
        load5: 0.4,
        load15: 0.3,
        containers_running: 3,
        containers_total: 5,
      },
    ]);
    await agent.until(() => agent.ackedUpTo === 1, 3000, "ack");
    const view = await serverView(agent.identity.server_id);
    expect(view.usage).toMatchObject({ cpu_percent: 37.5, ram_used_mb: 2048, ram_total_mb: 8192, disk_total_gb: 160, containers_running: 3 });
    agent.close();
  });
});

describe("events from many agents at once", () => {
  it("are written together, each stored once and acknowledged; a batch that cannot be stored fails alone", async () => {
    const agents = await Promise.all(Array.from({ length: 8 }, () => enrolled()));
    await Promise.all(agents.map((a) => a.connect()));
    // The database refuses one agent's events (as it might a row it cannot store).
    const doomed = agents[7]!;
    await cp.database.pool.query(`
      create function test_refuse_events() returns trigger language plpgsql as $$
      begin raise exception 'refused for this test'; end $$;
      create trigger test_refuse_events before insert on agent_events for each row
      when (new.server_id = '${doomed.identity.server_id}') execute function test_refuse_events();`);

    for (let round = 0; round < 5; round++) {
      for (const a of agents) a.sendEvents(a.logs(40, `round ${round}`));
    }
    // A container printed a NUL byte, which PostgreSQL cannot store as such.
    const nul = agents[0]!.logs(1, "before\u0000after");
    agents[0]!.sendEvents(nul);
    for (const a of agents.slice(0, 7)) await a.until(() => a.ackedUpTo === a.nextSeq - 1, 10_000, "every batch acknowledged");
    await doomed.until(() => doomed.closes.length > 0, 10_000, "the doomed agent's link to close");
    expect(doomed.closes).toEqual([CLOSE_CODES.going_away]);
    expect(doomed.ackedUpTo).toBe(0);

    const { rows } = await cp.database.pool.query<{ server_id: string; n: string; distinct_seqs: string; top: string }>(
      "select server_id, count(*) as n, count(distinct seq) as distinct_seqs, max(seq) as top from agent_events where server_id = any($1::uuid[]) group by server_id",
      [agents.map((a) => a.identity.server_id)],
    );
    const byServer = new Map(rows.map((r) => [r.server_id, r]));
    for (const a of agents.slice(0, 7)) {
      const expected = a === agents[0] ? 201 : 200;
      expect(byServer.get(a.identity.server_id)).toMatchObject({ n: String(expected), distinct_seqs: String(expected), top: String(expected) });
    }
    expect(byServer.has(doomed.identity.server_id)).toBe(false);
    const stored = await cp.database.pool.query("select body->>'message' as message from agent_events where server_id = $1 and seq = $2", [agents[0]!.identity.server_id, nul[0]!.seq]);
    expect(stored.rows[0].message).toBe("before\ufffdafter");
    for (const a of agents) a.close();
    await cp.database.pool.query("drop trigger test_refuse_events on agent_events; drop function test_refuse_events()");
  });
});

describe("two replicas on one database", () => {
  it("a command issued on replica A reaches the agent held by replica B", async () => {
    const b = await startControlPlane({ url: cp.url, listen: true, heartbeatMs: 1000 });
    try {
      const agent = await enrolled();
      await agent.connect(urlOf(b));
      const pinger = setInterval(() => agent.ping(), 300);
      const row = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId: agent.identity.server_id, type: "diagnostics", params: {}, issuedBy: "system:test" });
      await agent.until(() => agent.received.length === 1, 3000, "command via NOTIFY");
      expect(agent.received[0]!.command_id).toBe(row.commandId);
      expect(cp.app.gateway.isConnected(agent.identity.server_id)).toBe(false);
      expect(b.app.gateway.isConnected(agent.identity.server_id)).toBe(true);
      // Connecting to A takes over from B.
      await agent.connect(base);
      await waitFor(async () => !b.app.gateway.isConnected(agent.identity.server_id));
      expect(cp.app.gateway.isConnected(agent.identity.server_id)).toBe(true);
      clearInterval(pinger);
      agent.close();
    } finally {
      await b.app.close();
      await b.database.close();
    }
  });
});
