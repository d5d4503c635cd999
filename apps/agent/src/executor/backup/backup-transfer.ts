// Moving a backup's files between this server and the control plane's backup store, over
// the control plane URL the agent enrolled with (the commands give only a path on it):
// uploadFile streams a file up as soon as the backup has written it, fetchFile brings a
// backup's file down for a restore. Both are streamed (never whole in memory), retried a
// few times on a network failure or a 5xx, never on a refusal (4xx): a refusal is final and
// its message says why (e.g. the control plane computed another SHA-256 than declared).
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { pipeline } from "node:stream/promises";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import { CommandError } from "../runner/handler-types.ts";

export interface TransferFile {
  name: string;
  size: number;
  sha256: string;
}

export interface TransferOptions {
  /** The agent's control plane URL (identity.json), without a trailing slash. */
  base: string;
  /** A path on it, from the signed command. */
  path: string;
  signal: AbortSignal;
  /** Tries in all (default 3), with 1 s, 3 s, ... between them. */
  attempts?: number;
  /** Retry pause base in ms (tests shorten it). */
  retryDelayMs?: number;
}

/** Keep-alive connections: a backup's files go one after the other over the same one. */
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

class Refused extends Error {}

function urlOf(base: string, path: string, name: string): URL {
  if (!path.startsWith("/") || path.startsWith("//")) throw new CommandError("invalid_params", `"${path}" is not a path on the control plane`);
  return new URL(`${base}${path.replace(/\/+$/, "")}/${encodeURIComponent(name)}`);
}

function send(url: URL, options: http.RequestOptions, signal: AbortSignal): { request: http.ClientRequest; response: Promise<http.IncomingMessage> } {
  const lib = url.protocol === "https:" ? https : http;
  const request = lib.request(url, { ...options, agent: url.protocol === "https:" ? agents.https : agents.http, signal });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    request.once("response", resolve);
    request.once("error", reject);
  });
  return { request, response };
}

/** The body of a small answer (an error's JSON), at most 64 KiB of it. */
async function smallBody(response: http.IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of response) {
    if (text.length < 65536) text += (chunk as Buffer).toString("utf8");
  }
  return text.slice(0, 65536);
}

function refusal(what: string, status: number, body: string): string {
  try {
    const e = JSON.parse(body) as { error?: string; message?: string };
    return `${what} was refused by the control plane (${status} ${e.error ?? ""}): ${e.message ?? body.slice(0, 300)}`;
  } catch {
    return `${what} was refused by the control plane (${status}): ${body.slice(0, 300)}`;
  }
}

async function withRetries<T>(what: string, options: TransferOptions, code: string, attempt: () => Promise<T>): Promise<T> {
  const attempts = options.attempts ?? 3;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      options.signal.throwIfAborted();
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof Refused) throw new CommandError(code, message);
      if (error instanceof CommandError) throw error;
      if (n >= attempts) throw new CommandError(code, `${what} failed after ${attempts} tries: ${message}`);
      await new Promise((resolve) => setTimeout(resolve, (options.retryDelayMs ?? 1000) * (2 * n - 1)));
    }
  }
}

/**
 * PUT <base><path>/<name> with the file's bytes, declaring its size (Content-Length) and
 * SHA-256 (X-Checksum-Sha256); the control plane keeps it only if it computes the same.
 */
export function uploadFile(options: TransferOptions & { token: string; file: string; sum: TransferFile }): Promise<TransferFile> {
  const { sum } = options;
  const url = urlOf(options.base, options.path, sum.name);
  const what = `The upload of ${sum.name} (${sum.size} bytes) to ${url.origin}`;
  return withRetries(what, options, "backup_upload_failed", async () => {
    const { request, response } = send(
      url,
      {
        method: "PUT",
        headers: {
          authorization: `Bearer ${options.token}`,
          "content-type": "application/octet-stream",
          "content-length": String(sum.size),
          "x-checksum-sha256": sum.sha256,
        },
      },
      options.signal,
    );
    // The answer may come before the body is all sent (a refusal): it is the answer that counts.
    const sent = pipeline(createReadStream(options.file, { highWaterMark: 1 << 20 }), request).catch((error: unknown) => error);
    const res = await response;
    const body = await smallBody(res);
    await sent;
    const status = res.statusCode ?? 0;
    if (status >= 500 || status === 429 || status === 408) throw new Error(`the control plane answered ${status}`);
    if (status !== 200) throw new Refused(refusal(what, status, body));
    const got = JSON.parse(body) as Partial<TransferFile>;
    if (got.size !== sum.size || got.sha256 !== sum.sha256) {
      throw new Refused(`${what}: the control plane stored ${got.size} bytes with sha256 ${got.sha256}, not ${sum.size} bytes with sha256 ${sum.sha256}`);
    }
    return { name: sum.name, size: sum.size, sha256: sum.sha256 };
  });
}

/**
 * GET <base><path>/<name> into `dest` (mode 0600, written under a temporary name), kept only
 * if its size and SHA-256 are the signed ones.
 */
export function fetchFile(options: TransferOptions & { dest: string; sum: TransferFile }): Promise<void> {
  const { sum } = options;
  const url = urlOf(options.base, options.path, sum.name);
  const what = `The download of ${sum.name} (${sum.size} bytes) from ${url.origin}`;
  return withRetries(what, options, "backup_fetch_failed", async () => {
    const temp = `${options.dest}.download`;
    const { request, response } = send(url, { method: "GET" }, options.signal);
    request.end();
    const res = await response;
    const status = res.statusCode ?? 0;
    if (status !== 200) {
      const body = await smallBody(res);
      if (status >= 500 || status === 429 || status === 408) throw new Error(`the control plane answered ${status}`);
      throw new Refused(refusal(what, status, body));
    }
    const hash = createHash("sha256");
    let size = 0;
    try {
      await pipeline(
        res,
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            size += chunk.length;
            if (size > sum.size) throw new Refused(`${what}: more bytes arrived than the signed ${sum.size}`);
            hash.update(chunk);
            yield chunk;
          }
        },
        createWriteStream(temp, { mode: SECRET_FILE_MODE, highWaterMark: 1 << 20 }),
      );
      const digest = hash.digest("hex");
      if (size !== sum.size || digest !== sum.sha256) {
        throw new Refused(`${what}: ${size} bytes with sha256 ${digest} arrived, not the signed ${sum.size} bytes with sha256 ${sum.sha256}`);
      }
      await rename(temp, options.dest);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  });
}
