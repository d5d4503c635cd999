// Diagnostics when the engine is slow or gone: a partial report, never a hang or a failure.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../clock.ts";
import { createDockerClient, type DockerClient } from "../../docker/docker-client.ts";
import { openJournal } from "../../journal/journal.ts";
import { eventually } from "../../link/fake-control-plane.test-helpers.ts";
import type { Journal } from "../../journal/journal-types.ts";
import { createDiagnosticsHandler } from "./diagnostics.ts";
import type { HandlerContext } from "../runner/handler-types.ts";

describe("diagnostics", () => {
  let dir = "";
  let journal: Journal;
  let server: Server | null = null;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "berth-diag-"));
    journal = openJournal({ path: join(dir, "journal.db") });
  });
  afterEach(async () => {
    journal.close();
    if (server !== null) {
      server.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
      server = null;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  function run(docker: DockerClient, logs: string[]) {
    const handler = createDiagnosticsHandler({ journal, stateDir: dir, startedAt: new Date(), clock: systemClock, diskUsageDeadlineMs: 300 });
    const ctx: HandlerContext = {
      commandId: "00000000-0000-4000-8000-000000000001",
      signal: new AbortController().signal,
      docker,
      emit: {
        log: (level, message) => void logs.push(`${level}: ${message}`),
        stepStarted: () => {},
        stepFinished: () => {},
        stepFailed: () => {},
      },
    };
    return handler({}, ctx);
  }

  it("reports what it has when `docker system df` passes its deadline", async () => {
    // An engine on a socket that answers version and info but never df.
    const socketPath = join(dir, "docker.sock");
    let dfAbandoned = false;
    server = createServer((req, res) => {
      const json = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url?.endsWith("/version")) return json({ Version: "99.0.0", ApiVersion: "1.99" });
      if (req.url?.endsWith("/info")) return json({ Containers: 3, ContainersRunning: 2, Images: 5, DockerRootDir: dir });
      // /system/df: no answer, ever. The client must hang up rather than wait.
      req.socket.on("close", () => {
        dfAbandoned = true;
      });
    });
    await new Promise<void>((resolve) => server?.listen(socketPath, resolve));
    const logs: string[] = [];

    const startedAt = Date.now();
    const result = await run(createDockerClient({ socketPath }), logs);
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(result).toMatchObject({
      partial: true,
      docker: { reachable: true, version: "99.0.0", api_version: "1.99", containers_running: 2, containers_total: 3, images: 5 },
      disk: {
        docker_usage: { complete: false, error: "docker system df did not answer within 300 ms" },
        docker_root: { path: dir, total_gb: expect.any(Number) },
      },
    });
    expect(logs).toContain("warning: Diagnostics incomplete: docker disk usage: docker system df did not answer within 300 ms");
    await eventually(() => dfAbandoned, "the df request to be aborted", 2_000);
  });

  it("reports an unreachable engine instead of failing", async () => {
    const logs: string[] = [];
    const result = await run(createDockerClient({ socketPath: join(dir, "no-such.sock") }), logs);
    expect(result).toMatchObject({
      partial: true,
      docker: { reachable: false, version: null, containers_total: null, error: expect.stringContaining("unreachable") },
      disk: { state_dir: { total_gb: expect.any(Number) }, docker_root: null },
      journal: { pending_events: 0 },
    });
  });
});
