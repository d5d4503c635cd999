// The agent's side of moving backup files, against a small HTTP server standing in for the
// control plane: what it sends, what a refusal becomes, what is retried, and that a fetched
// file is kept only with its signed checksum.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchFile, uploadFile } from "./backup-transfer.ts";
import { BACKUP_FORMAT, markStored, pruneStoredBackups } from "./backup-files.ts";

const dir = mkdtempSync(join(tmpdir(), "berth-transfer-"));
const data = Buffer.from("a database dump, more or less");
const sum = { name: "db.dump", size: data.length, sha256: createHash("sha256").update(data).digest("hex") };
const file = join(dir, "db.dump");
writeFileSync(file, data);

/** What the stand-in answers next, one entry per request (then 200 with what it received). */
let script: { status: number; body?: unknown; serve?: Buffer }[] = [];
const received: { method: string; url: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
let server: http.Server;
let base = "";

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    const next = script.shift();
    if (next?.serve) return void res.writeHead(200, { "content-length": next.serve.length }).end(next.serve);
    if (next) return void res.writeHead(next.status, { "content-type": "application/json" }).end(JSON.stringify(next.body ?? {}));
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "db.dump", size: body.length, sha256: createHash("sha256").update(body).digest("hex") }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const options = { path: "/agent/v1/backups/b1/files", signal: AbortSignal.timeout(30_000), retryDelayMs: 10 };

describe("uploadFile", () => {
  it("PUTs the bytes with the token, size and sha256, and is done when the control plane confirms them", async () => {
    received.length = 0;
    script = [];
    await expect(uploadFile({ ...options, base, token: "bku_t", file, sum })).resolves.toEqual(sum);
    expect(received[0]).toMatchObject({ method: "PUT", url: "/agent/v1/backups/b1/files/db.dump" });
    expect(received[0]!.headers).toMatchObject({ authorization: "Bearer bku_t", "x-checksum-sha256": sum.sha256, "content-length": String(data.length) });
    expect(received[0]!.body.equals(data)).toBe(true);
  });

  it("a refusal fails at once with the control plane's reason", async () => {
    received.length = 0;
    script = [{ status: 422, body: { error: "upload_checksum_mismatch", message: "db.dump was refused and not kept" } }];
    await expect(uploadFile({ ...options, base, token: "t", file, sum })).rejects.toMatchObject({
      code: "backup_upload_failed",
      message: expect.stringMatching(/refused by the control plane \(422 upload_checksum_mismatch\): db\.dump was refused/),
    });
    expect(received).toHaveLength(1);
  });

  it("a 5xx is tried again; three of them fail the upload and say so", async () => {
    script = [{ status: 503 }];
    await expect(uploadFile({ ...options, base, token: "t", file, sum })).resolves.toEqual(sum);
    script = [{ status: 500 }, { status: 502 }, { status: 503 }];
    await expect(uploadFile({ ...options, base, token: "t", file, sum })).rejects.toMatchObject({ code: "backup_upload_failed", message: expect.stringMatching(/failed after 3 tries: the control plane answered 503/) });
  });
});

describe("fetchFile", () => {
  it("keeps a file with its signed size and sha256, and nothing else", async () => {
    script = [{ status: 200, serve: data }];
    const dest = join(dir, "fetched.dump");
    await fetchFile({ ...options, base, dest, sum });
    expect(readFileSync(dest).equals(data)).toBe(true);
    script = [{ status: 200, serve: Buffer.from("a database dump, less or more") }];
    const other = join(dir, "other.dump");
    await expect(fetchFile({ ...options, base, dest: other, sum })).rejects.toMatchObject({ code: "backup_fetch_failed", message: expect.stringMatching(/not the signed/) });
    expect(existsSync(other)).toBe(false);
    expect(existsSync(`${other}.download`)).toBe(false);
  });
});

it("local retention keeps the newest stored backups and never touches the others", async () => {
  const backups = join(dir, "backups");
  const make = async (id: string, createdAt: string, stored: boolean, format = BACKUP_FORMAT) => {
    const d = join(backups, id);
    rmSync(d, { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(d, { recursive: true }));
    writeFileSync(join(d, "manifest.json"), JSON.stringify({ format, backup_id: id, created_at: createdAt, files: [] }));
    if (stored) await markStored(d);
  };
  await make("a", "2026-11-01T00:00:00Z", true);
  await make("b", "2026-11-03T00:00:00Z", true);
  await make("c", "2026-11-02T00:00:00Z", true);
  await make("d", "2026-10-01T00:00:00Z", false);
  await make("e", "2026-09-01T00:00:00Z", true, "pre_deploy-ish");
  expect((await pruneStoredBackups(backups, 2)).map((r) => r.backup_id)).toEqual(["a"]);
  for (const [id, kept] of [["a", false], ["b", true], ["c", true], ["d", true], ["e", true]] as const) expect(existsSync(join(backups, id)), id).toBe(kept);
});
