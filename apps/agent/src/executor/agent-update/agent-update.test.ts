// agent.update against a real HTTP server and real files: only the signed bytes replace the
// executable, in one rename, with the previous one kept and the start marker written.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CommandEmitter, HandlerContext } from "../runner/handler-types.ts";
import { compareVersions, createAgentUpdateHandler } from "./agent-update.ts";
import { readUpdateMarker } from "../../state/update-marker.ts";
import { AGENT_VERSION } from "../../version.ts";

const script = (version: string) => `#!/bin/sh\necho ${version}\n`;
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

let dir: string;
let server: Server;
let url: string;
let body = "";
let restarts = 0;

const emit: CommandEmitter = { log: () => {}, stepStarted: () => {}, stepFinished: () => {}, stepFailed: () => {} };
const ctx = { commandId: "c", signal: new AbortController().signal, emit, docker: {} } as unknown as HandlerContext;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "berth-update-"));
  writeFileSync(join(dir, "berth-agent"), script(AGENT_VERSION), { mode: 0o755 });
  restarts = 0;
  server = createServer((_req, res) => res.end(body));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agent/v1/download/x64`;
});

afterEach(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const handler = () =>
  createAgentUpdateHandler({
    executable: join(dir, "berth-agent"),
    stateDir: dir,
    insecure: false,
    fetch: globalThis.fetch,
    requestRestart: () => void restarts++,
  });

describe("agent.update", () => {
  it("installs the signed executable: atomic swap, previous kept, marker written, restart asked", async () => {
    body = script("9.0.0");
    const result = await handler()({ version: "9.0.0", url, sha256: sha(body), size: body.length }, ctx);
    expect(result).toEqual({ updated: true, from: AGENT_VERSION, to: "9.0.0" });
    expect(readFileSync(join(dir, "berth-agent"), "utf8")).toBe(body);
    expect(readFileSync(join(dir, "berth-agent.previous"), "utf8")).toBe(script(AGENT_VERSION));
    expect(readUpdateMarker(dir)).toEqual({ from: AGENT_VERSION, to: "9.0.0", attempts: 0 });
    expect(restarts).toBe(1);
  });

  it("replaces nothing when the bytes are not the signed ones", async () => {
    body = script("9.0.0");
    await expect(handler()({ version: "9.0.0", url, sha256: sha("other"), size: body.length }, ctx)).rejects.toMatchObject({
      code: "update_checksum_mismatch",
    });
    await expect(handler()({ version: "9.0.0", url, sha256: sha(body), size: body.length - 1 }, ctx)).rejects.toMatchObject({
      code: "update_checksum_mismatch",
    });
    expect(readFileSync(join(dir, "berth-agent"), "utf8")).toBe(script(AGENT_VERSION));
    expect(readdirSync(dir).sort()).toEqual(["berth-agent"]);
    expect(restarts).toBe(0);
  });

  it("refuses an executable that does not report the signed version", async () => {
    body = script("8.0.0");
    await expect(handler()({ version: "9.0.0", url, sha256: sha(body), size: body.length }, ctx)).rejects.toMatchObject({ code: "update_broken" });
    expect(readdirSync(dir)).toEqual(["berth-agent"]);
  });

  it("does nothing for its own version and refuses a downgrade", async () => {
    expect(await handler()({ version: AGENT_VERSION, url, sha256: sha(""), size: 1 }, ctx)).toEqual({ updated: false, version: AGENT_VERSION });
    await expect(handler()({ version: "0.0.1", url, sha256: sha(""), size: 1 }, ctx)).rejects.toMatchObject({ code: "update_downgrade_refused" });
    expect(existsSync(join(dir, "update-pending"))).toBe(false);
  });

  it("refuses plain http to another machine", async () => {
    await expect(
      handler()({ version: "9.0.0", url: "http://updates.example.com/agent", sha256: sha(""), size: 1 }, ctx),
    ).rejects.toMatchObject({ code: "invalid_params" });
  });

  it("orders versions numerically", () => {
    expect(compareVersions("0.10.0", "0.9.9")).toBe(1);
    expect(compareVersions("1.2.3", "1.2.3")).toBe(0);
    expect(compareVersions("1.2.3-rc.1", "1.2.3")).toBe(-1);
    expect(compareVersions("1.2.2", "1.2.3-rc.1")).toBe(-1);
  });
});
