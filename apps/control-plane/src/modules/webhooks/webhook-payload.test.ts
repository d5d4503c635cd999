import { describe, expect, it } from "vitest";
import type { LiveSubscription, OrgEventRow } from "./webhook-deliveries.repo.ts";
import { deliveriesFor, nextCursor, subscriptionsByOrganization, webhookEventsFor } from "./webhook-payload.ts";

const ORG = "00000000-0000-4000-8000-000000000001";
const OTHER_ORG = "00000000-0000-4000-8000-000000000002";
const P1 = "00000000-0000-4000-8000-0000000000a1";
const P2 = "00000000-0000-4000-8000-0000000000a2";

function deployment(status: string, previous: string | null, kind = "deploy", project = P1): OrgEventRow {
  return {
    id: "42",
    organization_id: ORG,
    type: "deployment.status",
    data: { deployment_id: "d1", project_id: project, environment_id: "e1", kind, version: 3, trigger: "api", status, previous_status: previous, error_message: status === "failed" ? "boom" : null },
    created_at: new Date("2025-01-02T03:04:05.000Z"),
    tx: "900",
  };
}
function environment(status: string, previous: string | null): OrgEventRow {
  return { id: "43", organization_id: ORG, type: "environment.status", data: { environment_id: "e1", project_id: P1, status, previous_status: previous }, created_at: new Date("2025-01-02T03:04:06.000Z"), tx: "901" };
}
const sub = (id: string, events: string[], project: string | null = null, org = ORG): LiveSubscription => ({ id, organization_id: org, project_id: project, events });

describe("which webhook events a status change produces", () => {
  it.each(["deploy", "redeploy", "rollback"])("a %s that succeeds is deploy.completed and deployment.completed", (kind) => {
    expect(webhookEventsFor(deployment("success", "deploying", kind))).toEqual(["deploy.completed", "deployment.completed"]);
  });
  it("a deploy that fails is deploy.failed and deployment.failed", () => {
    expect(webhookEventsFor(deployment("failed", "deploying"))).toEqual(["deploy.failed", "deployment.failed"]);
  });
  it.each(["restart", "stop", "start", "backup", "restore", "destroy"])("a %s is no webhook, whatever its outcome", (kind) => {
    expect(webhookEventsFor(deployment("success", "running", kind))).toEqual([]);
    expect(webhookEventsFor(deployment("failed", "running", kind))).toEqual([]);
  });
  it.each(["queued", "deploying", "cancelled", "rolled_back"])("a deploy moving to %s is no webhook", (status) => {
    expect(webhookEventsFor(deployment(status, "pending"))).toEqual([]);
  });
  it("a row whose status did not change (a step event) is no webhook", () => {
    expect(webhookEventsFor(deployment("success", "success"))).toEqual([]);
    expect(webhookEventsFor(environment("running", "running"))).toEqual([]);
  });
  it("an environment status change is environment.status_changed", () => {
    expect(webhookEventsFor(environment("stopped", "running"))).toEqual(["environment.status_changed"]);
  });
  it("other organisation events are no webhook", () => {
    expect(webhookEventsFor({ type: "server.stats", data: { status: "a", previous_status: "b" } })).toEqual([]);
  });
});

describe("the deliveries a batch makes", () => {
  it("gives each subscription only the names it asked for, with the documented body", () => {
    const subs = subscriptionsByOrganization([sub("s1", ["deployment.completed"]), sub("s2", ["deploy.completed", "deployment.completed", "deploy.failed"])]);
    const out = deliveriesFor([deployment("success", "deploying")], subs);
    expect(out.map((d) => [d.subscriptionId, d.eventType, d.eventId])).toEqual([
      ["s1", "deployment.completed", "evt_42:deployment.completed"],
      ["s2", "deploy.completed", "evt_42:deploy.completed"],
      ["s2", "deployment.completed", "evt_42:deployment.completed"],
    ]);
    expect(out[0]!.payload).toEqual({
      id: "evt_42",
      type: "deployment.completed",
      created_at: "2025-01-02T03:04:05.000Z",
      organization_id: ORG,
      data: { deployment: { id: "d1", project_id: P1, environment_id: "e1", kind: "deploy", version: 3, trigger: "api", status: "success", error_message: null, environment_url: null, tests: null } },
    });
  });

  it("gives a project-bound subscription its own project's events only", () => {
    const subs = subscriptionsByOrganization([sub("mine", ["deploy.failed"], P1), sub("theirs", ["deploy.failed"], P2)]);
    expect(deliveriesFor([deployment("failed", "deploying")], subs).map((d) => d.subscriptionId)).toEqual(["mine"]);
  });

  it("gives nothing to another organisation's subscriptions", () => {
    const subs = subscriptionsByOrganization([sub("elsewhere", ["environment.status_changed"], null, OTHER_ORG)]);
    expect(deliveriesFor([environment("stopped", "running")], subs)).toEqual([]);
  });

  it("describes an environment change with both statuses", () => {
    const [d] = deliveriesFor([environment("stopped", "running")], subscriptionsByOrganization([sub("s", ["environment.status_changed"])]));
    expect(d!.payload.data).toEqual({ environment: { id: "e1", project_id: P1, status: "stopped", previous_status: "running", url: null } });
  });

  it("carries the URL of the environment, as the fan-out found it", () => {
    const urls = new Map([["e1", "https://erp.example.com"]]);
    const [env] = deliveriesFor([environment("stopped", "running")], subscriptionsByOrganization([sub("s", ["environment.status_changed"])]), urls);
    expect(env!.payload.data).toMatchObject({ environment: { url: "https://erp.example.com" } });
    const [dep] = deliveriesFor([deployment("success", "deploying")], subscriptionsByOrganization([sub("s", ["deployment.completed"])]), urls);
    expect(dep!.payload.data).toMatchObject({ deployment: { environment_url: "https://erp.example.com" } });
  });
});

describe("where the fan-out's cursor goes", () => {
  const caughtUp = { tx: "1000", id: "0" };
  it("continues after the last row of a full batch", () => {
    expect(nextCursor([{ tx: "5", id: "1" }, { tx: "7", id: "9" }], 2, caughtUp)).toEqual({ tx: "7", id: "9" });
  });
  it("moves up to the horizon when the batch was not full (or empty)", () => {
    expect(nextCursor([{ tx: "5", id: "1" }], 2, caughtUp)).toBe(caughtUp);
    expect(nextCursor([], 2, caughtUp)).toBe(caughtUp);
  });
});

describe("backup events", () => {
  const missed: OrgEventRow = {
    id: "44",
    organization_id: ORG,
    type: "backup.missed",
    data: { environment_id: "e1", project_id: P1, slot_at: "2025-01-02T03:00:00.000Z", reason: "The environment's server was offline", at: "2025-01-02T05:00:00.000Z" },
    created_at: new Date("2025-01-02T05:00:00.000Z"),
    tx: "902",
  };
  it("backup.failed and backup.missed go to their subscribers only, with the environment, reason and time", () => {
    expect(webhookEventsFor(missed)).toEqual(["backup.missed"]);
    const subs = subscriptionsByOrganization([sub("m", ["backup.missed"]), sub("f", ["backup.failed"]), sub("other", ["backup.missed"], P2)]);
    const out = deliveriesFor([missed], subs, new Map([["e1", "https://erp.example.com"]]));
    expect(out.map((d) => d.subscriptionId)).toEqual(["m"]);
    expect(out[0]!.payload).toMatchObject({
      type: "backup.missed",
      data: { backup: { environment_id: "e1", project_id: P1, environment_url: "https://erp.example.com", backup_id: null, slot_at: "2025-01-02T03:00:00.000Z", reason: "The environment's server was offline", at: "2025-01-02T05:00:00.000Z" } },
    });
  });
});
