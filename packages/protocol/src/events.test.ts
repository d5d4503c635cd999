import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import { Event, EVENT_KINDS, EventBatch, eventOrderProblem, type EventInput } from "./events.ts";
import { MAX_MESSAGE_LENGTH } from "./fields.ts";
import { DEPLOY_STEP_IDS } from "./steps.ts";

const TS = "2025-03-01T12:00:00.000Z";
const COMMAND_ID = "3c5e7a91-2b4d-4f6e-8a0c-1d3f5b7e9a20";
const DEPLOYMENT_ID = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d";
const ENVIRONMENT_ID = "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b";

const samples: EventInput[] = [
  { kind: "step.started", command_id: COMMAND_ID, deployment_id: DEPLOYMENT_ID, step: "pulling_image" },
  { kind: "step.finished", command_id: COMMAND_ID, deployment_id: null, step: "completed", message: "done" },
  {
    kind: "step.failed",
    command_id: COMMAND_ID,
    deployment_id: DEPLOYMENT_ID,
    step: "health_check",
    error: { code: "health_check_failed", message: "HTTP 502" },
  },
  {
    kind: "log",
    command_id: null,
    deployment_id: null,
    level: "warning",
    message: "disk 91% full",
    step: null,
    data: { mount: "/" },
  },
  { kind: "command.result", command_id: COMMAND_ID, ok: true, result: { lines: ["a", "b"] } },
  { kind: "command.result", command_id: COMMAND_ID, ok: false, error: { code: "image_pull_failed", message: "404" } },
  {
    kind: "stats",
    cpu_percent: 12.5,
    ram_used_mb: 1024,
    ram_total_mb: 8192,
    disk_used_gb: 20.4,
    disk_total_gb: 80,
    load1: 0.5,
    load5: 0.4,
    load15: 0.3,
    containers_running: 3,
    containers_total: 4,
  },
  { kind: "container.state", environment_id: ENVIRONMENT_ID, container: "erp-web", state: "running" },
  {
    kind: "proxy.state",
    running: true,
    image: "caddy:2",
    public_addresses: ["203.0.113.7"],
    error: null,
    routes: [
      {
        environment_id: ENVIRONMENT_ID,
        mode: "serving",
        domains: [
          {
            name: "erp.acme.example",
            dns: { status: "ok", resolved: ["203.0.113.7"], expected: ["203.0.113.7"] },
            certificate: { status: "valid", not_after: TS, issuer: "Let's Encrypt", error: null },
          },
        ],
      },
    ],
  },
  {
    kind: "mail.caught",
    mail_id: ENVIRONMENT_ID,
    environment_id: ENVIRONMENT_ID,
    received_at: TS,
    from: "noreply@acme.example",
    to: ["customer@client.example"],
    subject: "Invoice",
    size: 4096,
    html: "<p>Invoice</p>",
    text: null,
    truncated: false,
    headers: [{ name: "Subject", value: "Invoice" }],
    attachments: [{ filename: "invoice.pdf", content_type: "application/pdf", size: 2048 }],
  },
];

const withSeq = (event: EventInput, seq: number) => ({ ...event, seq, ts: TS });

describe("events", () => {
  it("accepts a sample of every kind", () => {
    expect(new Set(samples.map((event) => event.kind))).toEqual(new Set(EVENT_KINDS));
    for (const [i, event] of samples.entries()) expect(Value.Check(Event, withSeq(event, i + 1))).toBe(true);
  });

  it("takes every step id and nothing else", () => {
    const started = samples[0];
    if (started === undefined) throw new Error("no sample");
    for (const step of DEPLOY_STEP_IDS) expect(Value.Check(Event, withSeq({ ...started, step } as EventInput, 1))).toBe(true);
    expect(Value.Check(Event, withSeq({ ...started, step: "rebooting" } as unknown as EventInput, 1))).toBe(false);
  });

  it.each([
    ["a zero seq", { ...withSeq(samples[3]!, 1), seq: 0 }],
    ["a missing ts", { ...samples[3]!, seq: 1 }],
    ["an unknown kind", { ...withSeq(samples[3]!, 1), kind: "log.v2" }],
    ["an unknown log level", { ...withSeq(samples[3]!, 1), level: "fatal" }],
    ["a step failure without an error", { ...withSeq(samples[2]!, 1), error: undefined }],
    ["cpu above 100%", { ...withSeq(samples[6]!, 1), cpu_percent: 101 }],
    ["an unknown container state", { ...withSeq(samples[7]!, 1), state: "sleeping" }],
    ["an unknown certificate state", { ...withSeq(samples[8]!, 1), routes: [{ environment_id: ENVIRONMENT_ID, mode: "serving", domains: [{ name: "a.example", dns: { status: "ok", resolved: [], expected: [] }, certificate: { status: "expired", not_after: null, issuer: null, error: null } }] }] }],
    ["a route in an unknown mode", { ...withSeq(samples[8]!, 1), routes: [{ environment_id: ENVIRONMENT_ID, mode: "paused", domains: [] }] }],
  ])("rejects %s", (_name, event) => {
    expect(Value.Check(Event, event)).toBe(false);
  });

  it("takes messages of up to MAX_MESSAGE_LENGTH characters, in log lines, steps and errors", () => {
    const longest = "x".repeat(MAX_MESSAGE_LENGTH);
    const tooLong = longest + "x";
    const withMessage = (m: string) => [
      withSeq({ ...samples[3]!, message: m } as EventInput, 1),
      withSeq({ ...samples[1]!, message: m } as EventInput, 1),
      withSeq({ ...samples[2]!, error: { code: "health_check_failed", message: m } } as EventInput, 1),
      withSeq({ ...samples[5]!, error: { code: "image_pull_failed", message: m } } as EventInput, 1),
    ];
    for (const event of withMessage(longest)) expect(Value.Check(Event, event)).toBe(true);
    for (const event of withMessage(tooLong)) expect(Value.Check(Event, event)).toBe(false);
  });

  it("bounds a batch and requires increasing seqs", () => {
    const batch = { events: samples.map((event, i) => withSeq(event, i + 10)) };
    expect(Value.Check(EventBatch, batch)).toBe(true);
    expect(eventOrderProblem(batch)).toBeNull();
    expect(eventOrderProblem({ events: [...batch.events].reverse() })).toMatch(/^\/events\/1\/seq/);
    expect(Value.Check(EventBatch, { events: [] })).toBe(false);
  });
});
