// logs.tail: finds the ERP container by its labels, asks for exactly N lines, and caps
// what it returns. The engine is faked here; the real one is exercised end to end in
// test/e2e/support-console.e2e.test.ts.
import { describe, expect, it } from "vitest";
import type { DockerClient } from "../../docker/docker-client.ts";
import type { ContainerSummary } from "../../docker/workloads.ts";
import type { HandlerContext } from "../runner/handler-types.ts";
import { CommandError } from "../runner/handler-types.ts";
import { createLogsTailHandler, lastLines, LOGS_TAIL_MAX_BYTES } from "./logs-tail.ts";

const ENV = "3f1c2b6e-8d4a-4c7b-9e2f-0a1b2c3d4e5f";

function fakeDocker(containers: Partial<ContainerSummary>[], text: string) {
  const calls: { filters: string[][]; logs: [string, number][] } = { filters: [], logs: [] };
  const docker = {
    async listContainers(filter: { label: string[] }) {
      calls.filters.push(filter.label);
      return containers as ContainerSummary[];
    },
    async containerLogs(id: string, tail: number) {
      calls.logs.push([id, tail]);
      return text;
    },
  } as unknown as DockerClient;
  return { docker, calls };
}

function ctx(docker: DockerClient, logs: string[] = []): HandlerContext {
  return {
    commandId: "00000000-0000-4000-8000-000000000001",
    signal: new AbortController().signal,
    docker,
    emit: { log: (level, message) => void logs.push(`${level}: ${message}`), stepStarted: () => {}, stepFinished: () => {}, stepFailed: () => {} },
  };
}

describe("logs.tail", () => {
  it("returns the last lines of the environment's ERP container, found by Berth's labels", async () => {
    const { docker, calls } = fakeDocker(
      [{ id: "abc", name: `berth-${ENV}-erp`, state: "running", created: 1 }],
      "line 1\nline 2\r\nline 3\n",
    );
    const logs: string[] = [];
    const result = await createLogsTailHandler({ stateDir: "/tmp/none" })({ environment_id: ENV, lines: 20 }, ctx(docker, logs));
    expect(result).toEqual({ container: `berth-${ENV}-erp`, state: "running", lines: ["line 1", "line 2", "line 3"], truncated: false });
    expect(calls.filters[0]).toEqual(["berth.managed=true", `berth.environment_id=${ENV}`, "berth.role=erp"]);
    expect(calls.logs).toEqual([["abc", 20]]);
    expect(logs).toContain(`info: Read 3 log line(s) of berth-${ENV}-erp`);
  });

  it("fails with not_deployed when the environment has no ERP container here", async () => {
    const { docker } = fakeDocker([], "");
    const run = createLogsTailHandler({ stateDir: "/tmp/none" })({ environment_id: ENV, lines: 5 }, ctx(docker));
    await expect(run).rejects.toBeInstanceOf(CommandError);
    await expect(run).rejects.toMatchObject({ code: "not_deployed" });
  });

  it("keeps the newest lines within the line and byte caps", () => {
    expect(lastLines("a\nb\nc\nd", 2)).toEqual({ lines: ["c", "d"], truncated: true });
    expect(lastLines("", 5)).toEqual({ lines: [], truncated: false });
    const big = "x".repeat(1000);
    const text = Array.from({ length: 2000 }, (_, i) => `${i} ${big}`).join("\n");
    const tail = lastLines(text, 10_000);
    expect(tail.truncated).toBe(true);
    expect(tail.lines.at(-1)).toBe(`1999 ${big}`);
    expect(Buffer.byteLength(JSON.stringify(tail.lines))).toBeLessThanOrEqual(LOGS_TAIL_MAX_BYTES + 2);
    expect(tail.lines.length).toBeGreaterThan(1000);
  });
});
