// import-url (platform spec 4.3): the backup is downloaded from an HTTPS URL through the SSRF
// guard (lib/outbound: no private, loopback or link-local address unless the operator
// allows it), streamed to a file of this replica while it is hashed, with progress events.
// A cut connection resumes with Range when the server said Accept-Ranges: bytes (else it
// starts again), up to 5 tries. At the deadline (600 s) the migration fails with "Download
// timed out after 600s". Whatever the headers say, the download stops (and fails, keeping
// nothing) past what the organisation's quota leaves or the largest backup accepted: a body
// without a Content-Length cannot fill the disk. Then its size is reserved of the quota (as
// upload/init reserves a declared one: imports that declared no size and ran at once each
// found the whole room), and the file goes into the backup store through the same integrity
// check as an upload, and is removed.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open as openFile, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DomainError } from "../../../lib/errors.ts";
import { OutboundRefused, type RequestGuard } from "../../../lib/outbound/request-guard.ts";
import { MAX_UPLOAD_BYTES } from "../record/migration-states.ts";
import type { MigrationsRepo } from "../record/migrations.repo.ts";
import type { BackupReceipt } from "./backup-receipt.ts";
import type { UploadQuota } from "./upload-quota.ts";

const MAX_TRIES = 5;
const MAX_REDIRECTS = 5;

class Stopped extends Error {}
/** A download that will not be tried again: an answer that is not the file, too many bytes (with the API's code when there is one). */
class Refused extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Writes a download into a file, each run of bytes counted (`written`) only once the file has
 * it. Counting bytes as they passed, before the file had them, lost what was still waiting to
 * be written when a connection was cut: the resume asked for the bytes after it and the file
 * failed its integrity check (seen on a loaded CI machine). `settled()`: no write running.
 */
function intoFile(out: FileHandle, on: { check(bytes: number): Error | null; written(bytes: Buffer): void }): Writable & { settled(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const writer = new Writable({
    highWaterMark: 1 << 20,
    writev(chunks, done) {
      const bytes = Buffer.concat(chunks.map((c) => c.chunk as Buffer));
      const refused = on.check(bytes.length);
      if (refused) return done(refused);
      running = (async () => {
        for (let at = 0; at < bytes.length; ) {
          const { bytesWritten } = await out.write(bytes, at, bytes.length - at);
          on.written(bytes.subarray(at, at + bytesWritten));
          at += bytesWritten;
        }
      })();
      running.then(() => done(), done);
    },
  });
  return Object.assign(writer, { settled: () => running.catch(() => undefined) });
}

export function createUrlImport(deps: {
  guard: RequestGuard;
  repo: Pick<MigrationsRepo, "byId">;
  receipt: Pick<BackupReceipt, "noteProgress" | "receive">;
  quota: Pick<UploadQuota, "room" | "reserve">;
  /** Fails the migration with a message for the person (record.service.ts). */
  fail: (migrationId: string, message: string) => Promise<unknown>;
  dir: string;
  timeoutMs?: number;
  ca?: string | Buffer;
  /** Pause between tries after a cut (default 1 s × try). */
  retryDelayMs?: number;
}) {
  const timeoutMs = deps.timeoutMs ?? 600_000;

  /** The answer to a GET, following redirects (each hop checked by the guard, HTTPS only). */
  async function open(url: string, headers: Record<string, string>, signal: AbortSignal) {
    for (let hop = 0; ; hop++) {
      const res = await deps.guard.stream(url, { headers, signal, ...(deps.ca ? { ca: deps.ca } : {}) });
      const location = res.headers.location;
      if (res.status < 300 || res.status >= 400 || !location) return res;
      res.body.resume();
      if (hop >= MAX_REDIRECTS) throw new Refused("too many redirects");
      url = new URL(location, url).toString();
      if (!url.startsWith("https:")) throw new Refused("a redirect left HTTPS");
    }
  }

  return {
    async run(migrationId: string): Promise<void> {
      const m = await deps.repo.byId(migrationId);
      if (!m || m.status !== "importing" || !m.importUrl) return;
      await mkdir(deps.dir, { recursive: true, mode: 0o700 });
      const file = path.join(deps.dir, `import-${m.id}.part`);
      const deadline = AbortSignal.timeout(timeoutMs);
      const stop = new AbortController();
      const signal = AbortSignal.any([deadline, stop.signal]);
      // A cancel (or a newer upload) stops the download at the next look.
      const watch = setInterval(() => {
        void deps.repo.byId(m.id).then((now) => {
          if (!now || now.status !== "importing" || now.importUrl !== m.importUrl) stop.abort(new Stopped());
        });
      }, 2000);
      let received = 0;
      let total: number | null = m.declaredSizeBytes;
      // Whatever the server says (or does not say), no more than the quota leaves and the largest backup accepted.
      const room = await deps.quota.room(m);
      const bound = Math.min(room, MAX_UPLOAD_BYTES);
      const tooMuch = (bytes: number, how: string) =>
        bound === room
          ? new Refused(`${how} ${bytes} bytes, more than the ${room} bytes the organisation's migration quota leaves; nothing was kept`, "upload_quota_exceeded")
          : new Refused(`${how} ${bytes} bytes, more than the largest backup accepted (${MAX_UPLOAD_BYTES} bytes); nothing was kept`);
      let ranges = false;
      let hash = createHash("sha256");
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            const resuming = received > 0 && ranges;
            const res = await open(m.importUrl, resuming ? { range: `bytes=${received}-` } : {}, signal);
            if (res.status === 206 && resuming && new RegExp(`^bytes ${received}-`).test(String(res.headers["content-range"] ?? ""))) {
              // Continues where the cut left it.
            } else if (res.status === 200) {
              received = 0;
              hash = createHash("sha256");
              const length = Number(res.headers["content-length"]);
              if (total === null && Number.isSafeInteger(length) && length > 0) total = length;
              if (total !== null && total > bound) {
                res.body.resume();
                throw tooMuch(total, m.declaredSizeBytes === null ? "the server announces" : "file_size declares");
              }
              ranges = res.headers["accept-ranges"] === "bytes";
            } else {
              res.body.resume();
              throw new Refused(`the server answered HTTP ${res.status}, not 200 with the file`);
            }
            let lastNote = Date.now();
            const out = await openFile(file, received > 0 && res.status === 206 ? "a" : "w");
            const writer = intoFile(out, {
              // Refused before it is written: the file never holds more than was announced.
              check: (bytes) =>
                total !== null && received + bytes > total
                  ? new Refused(`more than the announced ${total} bytes arrived`)
                  : received + bytes > bound
                    ? tooMuch(received + bytes, "the download, without a Content-Length, reached")
                    : null,
              written: (bytes) => {
                received += bytes.length;
                hash.update(bytes);
                if (Date.now() - lastNote >= 1000) {
                  lastNote = Date.now();
                  void deps.receipt.noteProgress(m.id, received).catch(() => undefined);
                }
              },
            });
            try {
              await pipeline(res.body, writer, { signal });
            } finally {
              // After a cut too, `received` and the hash are then exactly what the file holds.
              await writer.settled();
              await out.close();
            }
            if (total === null || received === total) break;
            throw new Error(`the connection ended after ${received} of ${total} bytes`);
          } catch (error) {
            if (signal.aborted) throw error;
            // A refused address, a wrong answer or too many bytes will not change by trying again.
            const final = error instanceof OutboundRefused || error instanceof Refused;
            if (attempt >= MAX_TRIES || final) throw error;
            await new Promise((r) => setTimeout(r, (deps.retryDelayMs ?? 1000) * attempt));
          }
        }
        const size = total ?? received;
        // The bytes received are reserved (progress noted) before they are stored: refused when
        // the organisation's other migrations took the quota meanwhile.
        const current = await deps.quota.reserve(m, size, { receivedBytes: received }, ["importing"]).catch((error: unknown) => {
          throw error instanceof DomainError ? new Refused(error.message, error.code) : error;
        });
        if (!current) return;
        await deps.receipt.receive(current, createReadStream(file, { highWaterMark: 1 << 20 }), { size, sha256: m.declaredSha256 }).catch((error: unknown) => {
          // The integrity check already failed the migration with its message.
          if ((error as { code?: string }).code !== "upload_checksum_mismatch") throw error;
        });
      } catch (error) {
        if (stop.signal.aborted) return;
        // Nothing partial is kept: the file goes before the migration says it failed.
        await rm(file, { force: true });
        if (deadline.aborted) await deps.fail(m.id, `Download timed out after ${Math.round(timeoutMs / 1000)}s`);
        else {
          // A refusal with a code says it first, as a failed analysis does: "Download failed (upload_quota_exceeded): ...".
          const code = error instanceof Refused && error.code ? ` (${error.code})` : "";
          await deps.fail(m.id, `Download failed${code}: ${(error as Error).message}`);
        }
      } finally {
        clearInterval(watch);
        await rm(file, { force: true });
      }
    },
  };
}
