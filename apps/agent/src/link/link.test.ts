// The link against a fake control plane speaking the real protocol over a real socket.
import { describe, expect, it } from "vitest";
import { CLOSE_CODES, PROTOCOL_VERSIONS, generateKeyPair, publicKeyOf, verifyChallenge, type EventInput } from "@berth/protocol";
import { useAgentHarness } from "../agent/agent.test-helpers.ts";
import { toJournalInput } from "../events/wire-events.ts";
import { recordingLogger } from "../logger.ts";
import { AGENT_VERSION } from "../version.ts";
import { eventually, framesOf } from "./fake-control-plane.test-helpers.ts";
import { DRAIN_RECONNECT_SPREAD_MS } from "./link.ts";

const info = (message: string): EventInput => ({
  kind: "log",
  level: "info",
  command_id: null,
  deployment_id: null,
  step: null,
  message,
});

describe("link", () => {
  const harness = useAgentHarness();

  it("answers the challenge with a hello whose signature the control plane can verify", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.append(toJournalInput(info("before the first connection")));
    harness.agent(cp, identity, journal);

    const connection = await cp.readyConnection(0);
    const hello = connection.hello;
    expect(hello).toMatchObject({
      server_id: identity.serverId,
      agent_version: AGENT_VERSION,
      protocol_versions: [...PROTOCOL_VERSIONS],
      capabilities: ["backup", "deploy", "destroy", "diagnostics", "logs.tail", "redeploy", "restart", "restore", "route", "start", "stop"],
      last_command_seq: 0,
      next_event_seq: 2,
    });
    // Checked here with the agent's public key, not only inside the fake control plane.
    const signature = hello?.challenge_signature ?? "";
    expect(verifyChallenge(connection.nonce, identity.serverId, signature, publicKeyOf(identity.privateKey))).toBe(true);
    expect(verifyChallenge(connection.nonce, identity.serverId, signature, generateKeyPair().publicKey)).toBe(false);
    expect(verifyChallenge("b3RoZXIgbm9uY2Ugb2YgMjQgYnl0ZXMh", identity.serverId, signature, publicKeyOf(identity.privateKey))).toBe(false);
  });

  it("backs off to the maximum when the control plane refuses its identity", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    cp.trust(identity.serverId, generateKeyPair().publicKey); // Not the agent's key any more.
    const agent = harness.agent(cp, identity, harness.journal(), {
      backoff: { baseMs: 1_000, capMs: 60_000, random: () => 0.99 },
    });
    await eventually(() => agent.link.status().state === "waiting", "the agent to wait");
    const connection = cp.connections[0];
    expect(await connection?.closed).toMatchObject({ code: CLOSE_CODES.auth_failed });
    const status = agent.link.status();
    expect(status.last_error).toContain("4001");
    expect(Date.parse(status.next_attempt_at ?? "") - Date.now()).toBeGreaterThan(50_000);
  });

  it("grows its delay while connections die young, and starts over after one that stayed up", async () => {
    const cp = await harness.controlPlane();
    // Connections 0-2 and 4 are cut right after ready; connection 3 lives past stableAfterMs.
    cp.settings.afterReady = (connection) => {
      setTimeout(() => connection.socket.close(1001, "restarting"), connection.index === 3 ? 400 : 0);
    };
    const identity = harness.identity(cp);
    const delays: number[] = [];
    harness.agent(cp, identity, harness.journal(), {
      backoff: { baseMs: 100, capMs: 6_400, random: () => 0.999 },
      stableAfterMs: 300,
      onStatus: (status) => {
        if (status.state === "waiting" && status.next_attempt_at !== null && delays.length < 5) {
          delays.push(Date.parse(status.next_attempt_at) - Date.parse(status.since));
        }
      },
    });
    await eventually(() => delays.length === 5, "five reconnect delays");
    // Each delay is the difference of two millisecond timestamps, so allow 2 ms of rounding.
    const expected = [99, 199, 399, 99, 199];
    expect(delays).toHaveLength(expected.length);
    delays.forEach((d, i) => expect(Math.abs(d - expected[i]!), `delay ${i}: ${d} vs ${expected[i]}`).toBeLessThanOrEqual(2));
  });

  it("comes back after a drain (1012) within the spread without growing its backoff; other drops keep the backoff", async () => {
    const cp = await harness.controlPlane();
    // Connections 0, 1 and 3 drop (1001); connection 2 is handed over by a draining replica (1012).
    cp.settings.afterReady = (connection) => {
      const draining = connection.index === 2;
      setTimeout(() => connection.socket.close(draining ? CLOSE_CODES.service_restart : 1001, draining ? "draining" : "restarting"), 0);
    };
    const identity = harness.identity(cp);
    const waits: { code: string; delay: number }[] = [];
    harness.agent(cp, identity, harness.journal(), {
      // The same draw (0.1 of the range) for the backoff and the drain spread: 10% of each ceiling, 10% of the spread.
      backoff: { baseMs: 100, capMs: 6_400, random: () => 0.1 },
      onStatus: (status) => {
        if (status.state === "waiting" && status.next_attempt_at !== null && waits.length < 4) {
          waits.push({ code: status.last_error ?? "", delay: Date.parse(status.next_attempt_at) - Date.parse(status.since) });
        }
      },
    });
    await eventually(() => waits.length === 4, "four reconnect delays", 10_000);
    expect(waits.map((w) => w.code.slice(0, 16))).toEqual(["closed with 1001", "closed with 1001", "closed with 1012", "closed with 1001"]);
    // 1001: ceilings 100, 200; 1012: 10% of DRAIN_RECONNECT_SPREAD_MS; 1001 again: the next ceiling, 400 (not 800).
    const expected = [9, 19, Math.floor(0.1 * DRAIN_RECONNECT_SPREAD_MS), 39];
    waits.forEach((w, i) => expect(Math.abs(w.delay - expected[i]!), `delay ${i}: ${w.delay} vs ${expected[i]}`).toBeLessThanOrEqual(2));
    expect(DRAIN_RECONNECT_SPREAD_MS).toBeLessThanOrEqual(10_000);
  });

  it("sends journalled events in batches of at most 500 and deletes them once acknowledged", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.appendMany(Array.from({ length: 1_203 }, (_, i) => toJournalInput(info(`line ${i + 1}`))));
    harness.agent(cp, identity, journal);

    await eventually(() => cp.stored.size === 1_203, "all events stored");
    expect(cp.batches.every((batch) => batch.length <= 500)).toBe(true);
    expect(cp.batches.map((batch) => batch.length)).toEqual([500, 500, 203]);
    await eventually(() => journal.stats().pendingCount === 0, "the journal to empty");
    expect(journal.lastAckedSeq()).toBe(1_203);
  });

  it("keeps one unacknowledged batch on the wire, and resends it when acks stop coming", async () => {
    const cp = await harness.controlPlane();
    cp.settings.autoAck = false;
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.appendMany(Array.from({ length: 1_200 }, (_, i) => toJournalInput(info(`line ${i + 1}`))));
    harness.agent(cp, identity, journal, { sender: { ackTimeoutMs: 1_000 } });
    const connection = await cp.readyConnection(0);

    await eventually(() => cp.batches.length === 1, "one batch");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(cp.batches).toHaveLength(1); // Nothing more until it is acknowledged.

    connection.send("events.ack", { up_to_seq: 500 });
    await eventually(() => cp.batches.length === 2, "the second batch");
    expect(cp.batches[1]?.map((e) => e.seq)).toEqual(Array.from({ length: 500 }, (_, i) => 501 + i));
    expect(journal.lastAckedSeq()).toBe(500);

    // No ack for it: after the ack timeout the same batch goes again, from the last ack.
    await eventually(() => cp.batches.length === 3, "the resend", 5_000);
    expect(cp.batches[2]?.map((e) => e.seq)).toEqual(cp.batches[1]?.map((e) => e.seq));
    expect(cp.stored.size).toBe(1_000);
  });

  it("keeps events until they are acknowledged, and deletes exactly what an ack covers", async () => {
    const cp = await harness.controlPlane();
    cp.settings.autoAck = false;
    const identity = harness.identity(cp);
    const journal = harness.journal();
    const agent = harness.agent(cp, identity, journal);
    const connection = await cp.readyConnection(0);

    for (const n of [1, 2, 3]) agent.outbox.append(info(`live ${n}`));
    await eventually(() => cp.stored.size === 3, "three events sent");
    expect(journal.pending().map((e) => e.seq)).toEqual([1, 2, 3]);

    connection.send("events.ack", { up_to_seq: 2 });
    await eventually(() => journal.lastAckedSeq() === 2, "the ack applied");
    expect(journal.pending().map((e) => e.seq)).toEqual([3]);
  });

  it("never lets an ack delete events it has not sent yet", async () => {
    const cp = await harness.controlPlane();
    cp.settings.autoAck = false;
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.appendMany([1, 2, 3, 4, 5].map((n) => toJournalInput(info(`event ${n}`))));
    harness.agent(cp, identity, journal, { sender: { window: 1, maxBatchEvents: 2 } });
    const connection = await cp.readyConnection(0);
    await eventually(() => cp.batches.length === 1, "the first batch");

    connection.send("events.ack", { up_to_seq: 5 }); // A confused control plane.
    cp.settings.autoAck = true;
    await eventually(() => cp.stored.size === 5, "the rest sent after all");
    expect(cp.batches.map((batch) => batch.map((e) => e.seq))).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("resends from ready.resend_from after a reconnect", async () => {
    const cp = await harness.controlPlane();
    cp.settings.autoAck = false;
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.appendMany([1, 2, 3, 4, 5].map((n) => toJournalInput(info(`event ${n}`))));
    harness.agent(cp, identity, journal);

    const first = await cp.readyConnection(0);
    await eventually(() => framesOf(first, "events").length > 0, "the first batch");
    expect(framesOf(first, "events")[0]?.payload.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);

    // The control plane stored 1 and 2 but the ack was lost with the link.
    cp.settings.resendFrom = () => 3;
    first.socket.terminate();
    const second = await cp.readyConnection(1);
    await eventually(() => framesOf(second, "events").length > 0, "the resend");
    expect(framesOf(second, "events")[0]?.payload.events.map((e) => e.seq)).toEqual([3, 4, 5]);
    // resend_from says 1 and 2 are stored: they leave the journal without an explicit ack.
    expect(journal.pending().map((e) => e.seq)).toEqual([3, 4, 5]);
  });

  it("handles gaps in seqs: sends what exists, and a cumulative ack clears it all", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    journal.appendMany([toJournalInput(info("a")), toJournalInput(info("b"))]);
    journal.skipEventSeqTo(10);
    journal.append(toJournalInput(info("c")));
    harness.agent(cp, identity, journal);

    await eventually(() => cp.stored.size === 3, "three events");
    expect([...cp.stored.keys()]).toEqual([1, 2, 10]);
    await eventually(() => journal.stats().pendingCount === 0, "the journal to empty");
  });

  it("skips its seq counter past what the control plane holds, so no seq is reused", async () => {
    const cp = await harness.controlPlane();
    cp.settings.resendFrom = () => 41; // The journal lost its last seqs to a power cut.
    const identity = harness.identity(cp);
    const journal = harness.journal();
    const agent = harness.agent(cp, identity, journal);
    await cp.readyConnection(0);
    agent.outbox.append(info("after the skip"));
    await eventually(() => cp.stored.size === 1, "one event");
    expect([...cp.stored.keys()]).toEqual([41]);
  });

  it("declares the link dead after two silent heartbeats, closes 4003 and reconnects afresh", async () => {
    const cp = await harness.controlPlane();
    cp.settings.answerPings = false;
    const identity = harness.identity(cp);
    harness.agent(cp, identity, harness.journal());

    const first = await cp.readyConnection(0);
    const startedAt = Date.now();
    const closed = await first.closed;
    const silentFor = Date.now() - startedAt;
    expect(closed.code).toBe(CLOSE_CODES.heartbeat_timeout);
    expect(silentFor).toBeGreaterThanOrEqual(1_900);
    expect(silentFor).toBeLessThan(4_500);
    expect(framesOf(first, "ping").length).toBeGreaterThanOrEqual(1);

    cp.settings.answerPings = true;
    const second = await cp.readyConnection(1);
    await eventually(() => framesOf(second, "ping").length >= 1, "pings on the new connection");
  }, 15_000);

  it("nacks an unreadable frame, logs a nack, and never answers a nack with a nack", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const logger = recordingLogger();
    harness.agent(cp, identity, harness.journal(), { logger });
    const connection = await cp.readyConnection(0);

    connection.sendRaw("{ this is not json");
    await eventually(() => framesOf(connection, "nack").length === 1, "a nack");
    expect(framesOf(connection, "nack")[0]?.payload).toMatchObject({ ref_id: null, code: "invalid_json" });

    const nackId = connection.send("nack", { ref_id: "some-frame", code: "invalid_payload", message: "bad batch" });
    connection.sendRaw(JSON.stringify({ v: 1, type: "nack", id: "broken-nack", ts: new Date().toISOString(), payload: {} }));
    await eventually(() => logger.entries.some((e) => e.message === "control plane refused a frame"), "the nack logged");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const nacks = framesOf(connection, "nack");
    expect(nacks).toHaveLength(1);
    expect(nacks.some((frame) => frame.payload.ref_id === nackId || frame.payload.ref_id === "broken-nack")).toBe(false);
  });

  it("closes normally at shutdown once the last events are acknowledged", async () => {
    const cp = await harness.controlPlane();
    const identity = harness.identity(cp);
    const journal = harness.journal();
    const agent = harness.agent(cp, identity, journal);
    const connection = await cp.readyConnection(0);
    agent.outbox.append(info("last words"));
    await agent.shutdown();
    expect(await connection.closed).toMatchObject({ code: CLOSE_CODES.normal });
    expect(cp.stored.size).toBe(1);
    expect(journal.stats().pendingCount).toBe(0);
    expect(agent.link.status().state).toBe("stopped");
  });
});
