// End to end: a real control plane, the real agent process and a real Docker engine, with
// the link cut and restored, the agent killed and restarted, and the control plane
// restarted while commands and events flow. Nothing is lost, nothing stored or run twice.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyPair, keyIdFor, signCommand, type SignedCommand, type UnsignedCommand } from "@berth/protocol";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "../support/agent-process.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { freePort } from "../setup/global-setup.ts";
import { publicClient } from "../support/http.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let first: TestControlPlane | undefined;
let port: number;
let proxy: TcpProxy;
let agent: AgentProcess;
let d: DemoOrganization;
let serverId: string;
const issued: string[] = [];

beforeAll(async () => {
  port = await freePort();
  cp = await startControlPlane({ port, heartbeatMs: 1000 });
  proxy = await startTcpProxy(port);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  agent = await AgentProcess.create();
}, 60_000);

afterAll(async () => {
  await agent?.cleanup();
  await proxy?.close();
  await cp?.close();
  await first?.close();
});

const q = async <T = Record<string, unknown>>(text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows as T[];

function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 200, detail: () => `agent output:\n${agent.output.slice(-3000)}` });
}

const online = () => cp.app.gateway.isConnected(serverId);
const issue = async () => {
  const row = await cp.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:e2e" });
  issued.push(row.commandId);
  return row.commandId;
};
const finished = async (ids: string[]) => {
  const rows = await q<{ n: number }>("select count(*)::int as n from agent_commands where command_id = any($1::uuid[]) and state in ('succeeded', 'failed')", [ids]);
  return rows[0]!.n === ids.length;
};

it("enrols through the public API's token and comes online", async () => {
  const created = await publicClient(cp.app, d.api_keys.org_rw).post("/servers", { name: "e2e" });
  serverId = created.body.server.id;
  await agent.enroll(`http://127.0.0.1:${proxy.port}`, created.body.enrollment.token);
  agent.start();
  await waitFor("agent online", async () => online());
  const view = await publicClient(cp.app, d.api_keys.org_ro).get(`/servers/${serverId}`);
  expect(view.body).toMatchObject({ status: "online", agent_version: expect.any(String) });
  expect(view.body.cpu_cores).toBeGreaterThan(0);
}, 90_000);

it("runs diagnostics against the real Docker engine and records the result", async () => {
  const id = await issue();
  await waitFor("diagnostics result", () => finished([id]));
  const [row] = await q<{ state: string; result: { docker?: unknown } }>("select state, result from agent_commands where command_id = $1", [id]);
  expect(row!.state).toBe("succeeded");
  expect(JSON.stringify(row!.result)).toMatch(/containers/i);
}, 60_000);

it("commands issued while the link is cut run once it is restored", async () => {
  proxy.cut();
  await waitFor("link seen as down", async () => !online(), 10_000);
  const ids = [await issue(), await issue(), await issue()];
  await new Promise((r) => setTimeout(r, 1500));
  proxy.restore();
  await waitFor("agent back online", async () => online());
  await waitFor("results after the cut", () => finished(ids));
}, 90_000);

it("a killed agent restarts, keeps its identity, and no command runs twice", async () => {
  const before = await issue();
  await agent.stop("SIGKILL");
  const during = [await issue(), await issue()];
  agent.start();
  await waitFor("agent online after restart", async () => online());
  await waitFor("results after restart", () => finished([before, ...during]));
}, 90_000);

it("survives a control-plane restart", async () => {
  first = cp;
  await first.stop();
  const ids: string[] = [];
  // The database keeps the outbox while no control plane runs.
  cp = await startControlPlane({ url: first.url, port, heartbeatMs: 1000 });
  ids.push(await issue(), await issue());
  await waitFor("agent reconnected to the new control plane", async () => online(), 60_000);
  await waitFor("results after the restart", () => finished(ids));
}, 120_000);

describe("commands the real agent must refuse", () => {
  // Written straight into the outbox, as a compromised or rogue control plane would.
  async function inject(cmd: SignedCommand): Promise<void> {
    await q(
      `insert into agent_commands (command_id, server_id, seq, type, signed, issued_by, state, created_at, expires_at)
       values ($1, $2, $3, $4, $5, 'system:rogue', 'pending', now(), now() + interval '10 minutes')`,
      [cmd.command_id, serverId, cmd.seq, cmd.type, cmd],
    );
    await q("select pg_notify('berth_agent_commands', $1)", [serverId]);
  }
  async function nextSeq(): Promise<number> {
    const [row] = await q<{ seq: string }>("update servers set last_command_seq = last_command_seq + 1 where id = $1 returning last_command_seq as seq", [serverId]);
    return Number(row!.seq);
  }
  async function unsigned(overrides: Record<string, unknown> = {}) {
    const now = Date.now();
    return {
      command_id: randomUUID(),
      server_id: serverId,
      seq: await nextSeq(),
      type: "diagnostics",
      issued_at: new Date(now).toISOString(),
      expires_at: new Date(now + 600_000).toISOString(),
      issued_by: null,
      params: {},
      ...overrides,
    } as unknown as UnsignedCommand;
  }
  async function rejection(commandId: string): Promise<string | null> {
    await waitFor(`rejection of ${commandId}`, async () => {
      const [row] = await q<{ state: string }>("select state from agent_commands where command_id = $1", [commandId]);
      return row?.state === "rejected";
    });
    const [row] = await q<{ rejection_code: string }>("select rejection_code from agent_commands where command_id = $1", [commandId]);
    const ran = await q("select 1 from agent_events where server_id = $1 and kind = 'command.result' and command_id = $2", [serverId, commandId]);
    expect(ran).toHaveLength(0);
    return row!.rejection_code;
  }

  it("signed with a key the agent did not pin", async () => {
    const rogue = generateKeyPair();
    const cmd = signCommand(await unsigned(), rogue.privateKey, keyIdFor(rogue.publicKey));
    await inject(cmd);
    expect(await rejection(cmd.command_id)).toBe("unknown_key");
  }, 30_000);

  it("tampered after signing", async () => {
    const cmd = await cp.app.services.signer.sign(await unsigned());
    await inject({ ...cmd, issued_by: "00000000-0000-4000-8000-000000000666" });
    expect(await rejection(cmd.command_id)).toBe("bad_signature");
  }, 30_000);

  it("for another server", async () => {
    const cmd = await cp.app.services.signer.sign(await unsigned({ server_id: randomUUID() }));
    await inject(cmd);
    expect(await rejection(cmd.command_id)).toBe("wrong_server");
  }, 30_000);

  it("expired", async () => {
    const past = Date.now() - 3_600_000;
    const cmd = await cp.app.services.signer.sign(
      await unsigned({ issued_at: new Date(past).toISOString(), expires_at: new Date(past + 60_000).toISOString() }),
    );
    await inject(cmd);
    expect(await rejection(cmd.command_id)).toBe("expired");
  }, 30_000);

  it("replayed: a command that already ran gets its recorded answer and never runs again", async () => {
    // The outbox forgets a command once the agent took it: the replay is one a rogue kept.
    const cmd = await cp.app.services.signer.sign(await unsigned());
    const id = cmd.command_id;
    await inject(cmd);
    await waitFor("the command ran", () => finished([id]));
    await q("update agent_commands set state = 'pending', signed = $2 where command_id = $1", [id, cmd]);
    await q("select pg_notify('berth_agent_commands', $1)", [serverId]);
    await waitFor("replayed command answered", async () => {
      const [row] = await q<{ state: string }>("select state from agent_commands where command_id = $1", [id]);
      return row?.state !== "pending";
    });
    await new Promise((r) => setTimeout(r, 1000));
    const results = await q("select 1 from agent_events where server_id = $1 and kind = 'command.result' and command_id = $2", [serverId, id]);
    expect(results).toHaveLength(1);
    await q("update agent_commands set state = 'succeeded' where command_id = $1", [id]);
  }, 30_000);
});

describe("signing key rotation", () => {
  it("agents learn the new key before it signs, and refuse the old one once it is retired", async () => {
    const rotation = cp.app.services.keyRotation;
    const oldKeyId = await cp.app.services.signer.activeKeyId();
    // Signed now, by the old key, and kept back: a replay of it after retirement must fail.
    const heldBack = await cp.app.services.signer.sign({
      command_id: randomUUID(),
      server_id: serverId,
      seq: 1_000_000,
      type: "diagnostics",
      issued_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      issued_by: null,
      params: {},
    } as unknown as UnsignedCommand);
    await q("update servers set last_command_seq = greatest(last_command_seq, 1000000) where id = $1", [serverId]);

    const begun = await rotation.begin();
    await waitFor("agents confirm the new key", async () => (await rotation.unconfirmed(begun.commandIds)) === 0);
    const pinned = () => JSON.parse(readFileSync(path.join(agent.stateDir, "identity.json"), "utf8")).signing_keys.map((k: { key_id: string }) => k.key_id).sort();
    expect(pinned()).toEqual([oldKeyId, begun.key.key_id].sort());

    await rotation.promote(begun.key.key_id);
    const signedByNew = await issue();
    await waitFor("command signed by the new key", () => finished([signedByNew]));
    // Issued once the new key signs (the outbox keeps no copy of a command the agent took).
    expect(await cp.app.services.signer.activeKeyId()).toBe(begun.key.key_id);
    const [row] = await q<{ state: string }>("select state from agent_commands where command_id = $1", [signedByNew]);
    expect(row).toEqual({ state: "succeeded" });

    const retired = await rotation.retire(oldKeyId);
    await waitFor("agents drop the old key", async () => (await rotation.unconfirmed(retired.commandIds)) === 0);
    expect(pinned()).toEqual([begun.key.key_id]);

    await q(
      `insert into agent_commands (command_id, server_id, seq, type, signed, issued_by, state, created_at, expires_at)
       values ($1, $2, $3, 'diagnostics', $4, 'system:replay', 'pending', now(), now() + interval '10 minutes')`,
      [heldBack.command_id, serverId, heldBack.seq, heldBack],
    );
    await q("select pg_notify('berth_agent_commands', $1)", [serverId]);
    await waitFor("old-key command refused", async () => {
      const [r] = await q<{ state: string; rejection_code: string | null }>("select state, rejection_code from agent_commands where command_id = $1", [heldBack.command_id]);
      return r?.state === "rejected" && r.rejection_code === "unknown_key";
    });

    // The pinned set survives a restart of the agent.
    await agent.stop("SIGTERM");
    agent.start();
    await waitFor("agent back after restart", async () => online());
    const after = await issue();
    await waitFor("command after restart", () => finished([after]));
    expect(pinned()).toEqual([begun.key.key_id]);
  }, 90_000);
});

it("ends with every command answered exactly once and every event stored once", async () => {
  await waitFor("agent journal drained", async () => (await agent.status()).journal.pendingCount === 0, 30_000);
  const results = await q<{ command_id: string; n: number }>(
    "select command_id, count(*)::int as n from agent_events where server_id = $1 and kind = 'command.result' group by command_id",
    [serverId],
  );
  const byId = new Map(results.map((r) => [r.command_id, r.n]));
  for (const id of issued) expect(byId.get(id), `result events for ${id}`).toBe(1);
  const states = await q<{ state: string }>("select state from agent_commands where command_id = any($1::uuid[])", [issued]);
  expect(states.every((s) => s.state === "succeeded" || s.state === "failed")).toBe(true);
  const status = await agent.status();
  const [server] = await q<{ last_event_seq: string }>("select last_event_seq from agent_streams where server_id = $1", [serverId]);
  expect(Number(server!.last_event_seq)).toBe(status.journal.nextEventSeq - 1);
  expect(status.journal.lastAckedSeq).toBe(status.journal.nextEventSeq - 1);
  expect(await agent.stop("SIGTERM")).toBe(0);
}, 60_000);
