// Sending a backup file the way the API's upload/init answered: tier 1 one multipart POST;
// the larger tiers the tus 1.0 protocol (create, PATCH in chunks, HEAD to learn where to
// continue after a cut, waiting 1 s, 2 s, 4 s … at most 60 s between tries, as upload/init's
// retry contract says). The tus upload's URL is kept in the config directory per migration,
// so `berth migrate <file> --resume <migration-id>` continues from the server's offset after
// the CLI itself was stopped. A few lines of tus rather than a dependency: the protocol
// subset the API speaks is small (no concatenation, no S3 parts from the CLI).
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, openAsBlob, readFileSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { USER_AGENT } from "./context.ts";
import { CliError, EXIT } from "./errors.ts";

export interface UploadTarget {
  upload_url: string;
  protocol: "multipart" | "tus" | "s3_multipart";
  chunk_size_bytes: number | null;
}

export interface UploadFile {
  path: string;
  name: string;
  size: number;
  sha256: string;
}

export type OnProgress = (sent: number, total: number) => void;

const TUS = { "tus-resumable": "1.0.0" };
const MAX_WAIT_MS = 60_000;
/** Tries per chunk before giving up (1+2+4+…+60 s: about ten minutes). */
const MAX_TRIES = 15;

export async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Where the tus upload of a migration is remembered (for --resume). */
function statePath(env: NodeJS.ProcessEnv, migrationId: string): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), ".config");
  return path.join(base, "berth", "uploads", `${migrationId}.json`);
}

interface SavedUpload {
  url: string;
  size: number;
  sha256: string;
}

export function savedUpload(env: NodeJS.ProcessEnv, migrationId: string): SavedUpload | null {
  try {
    return JSON.parse(readFileSync(statePath(env, migrationId), "utf8")) as SavedUpload;
  } catch {
    return null;
  }
}

function save(env: NodeJS.ProcessEnv, migrationId: string, s: SavedUpload): void {
  const p = statePath(env, migrationId);
  mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 });
  writeFileSync(p, JSON.stringify(s), { mode: 0o600 });
}

function forget(env: NodeJS.ProcessEnv, migrationId: string): void {
  rmSync(statePath(env, migrationId), { force: true });
}

async function refusal(res: Response): Promise<CliError> {
  const body = (await res.json().catch(() => null)) as { error?: string; message?: string } | null;
  return new CliError(`The upload was refused: ${body?.message ?? `HTTP ${res.status}`} (${body?.error ?? res.status})`, res.status === 401 ? EXIT.auth : EXIT.failed, body?.error ?? "upload_refused");
}

/** Sends the file; resolves when the server has it all (and started the analysis). */
export async function uploadBackup(opts: {
  env: NodeJS.ProcessEnv;
  token: string;
  migrationId: string;
  target: UploadTarget;
  file: UploadFile;
  chunkBytes?: number;
  onProgress: OnProgress;
  note: (text: string) => void;
}): Promise<void> {
  const auth = { authorization: `Bearer ${opts.token}`, "user-agent": USER_AGENT };
  const { file, target } = opts;
  if (target.protocol === "multipart") {
    opts.onProgress(0, file.size);
    const form = new FormData();
    form.append("sha256", file.sha256);
    form.append("file", await openAsBlob(file.path), file.name);
    const res = await fetch(target.upload_url, { method: "POST", headers: auth, body: form });
    if (!res.ok) throw await refusal(res);
    opts.onProgress(file.size, file.size);
    return;
  }
  if (target.protocol !== "tus") throw new CliError(`This control plane answered the ${target.protocol} upload protocol, which the CLI does not speak; upload from the dashboard.`, EXIT.failed, "unsupported_upload_protocol");
  const chunk = opts.chunkBytes ?? target.chunk_size_bytes ?? 10 * 1024 * 1024;

  const request = (url: string, init: RequestInit) => fetch(url, { ...init, headers: { ...auth, ...TUS, ...(init.headers as Record<string, string>) } });

  let saved = savedUpload(opts.env, opts.migrationId);
  if (saved && (saved.size !== file.size || saved.sha256 !== file.sha256)) saved = null;
  let url: string;
  if (saved) {
    url = saved.url;
  } else {
    const meta = `filename ${Buffer.from(file.name).toString("base64")},sha256 ${Buffer.from(file.sha256).toString("base64")}`;
    const res = await request(target.upload_url, { method: "POST", headers: { "upload-length": String(file.size), "upload-metadata": meta } });
    if (res.status !== 201) throw await refusal(res);
    url = new URL(res.headers.get("location")!, target.upload_url).href;
    save(opts.env, opts.migrationId, { url, size: file.size, sha256: file.sha256 });
  }

  /** Where the server stands: HEAD's Upload-Offset. */
  const offsetNow = async (): Promise<number> => {
    const res = await request(url, { method: "HEAD" });
    if (res.status === 404 || res.status === 410) {
      forget(opts.env, opts.migrationId);
      throw new CliError("The server no longer has this upload (replaced or cancelled); start again without --resume.", EXIT.failed, "upload_gone");
    }
    if (!res.ok) throw new Error(`HEAD answered ${res.status}`);
    return Number(res.headers.get("upload-offset"));
  };

  let offset = saved ? await offsetNow() : 0;
  if (saved) opts.note(`Resuming the upload at ${offset} of ${file.size} bytes.`);
  opts.onProgress(offset, file.size);
  const fh = await open(file.path, "r");
  try {
    let tries = 0;
    while (offset < file.size) {
      const length = Math.min(chunk, file.size - offset);
      const bytes = Buffer.alloc(length);
      await fh.read(bytes, 0, length, offset);
      try {
        const res = await request(url, { method: "PATCH", headers: { "content-type": "application/offset+octet-stream", "upload-offset": String(offset) }, body: bytes });
        if (res.status === 204) {
          offset = Number(res.headers.get("upload-offset"));
          tries = 0;
          opts.onProgress(offset, file.size);
          continue;
        }
        if (res.status !== 409 && res.status < 500) throw await refusal(res);
        throw new Error(`PATCH answered ${res.status}`);
      } catch (err) {
        if (err instanceof CliError) throw err;
        if (++tries > MAX_TRIES) throw new CliError(`The upload failed ${MAX_TRIES} times in a row (${err instanceof Error ? err.message : String(err)}); rerun with --resume ${opts.migrationId}.`, EXIT.unreachable, "upload_failed");
        const wait = Math.min(1000 * 2 ** (tries - 1), MAX_WAIT_MS);
        opts.note(`Upload interrupted (${err instanceof Error ? err.message : String(err)}); continuing in ${wait / 1000} s.`);
        await new Promise((r) => setTimeout(r, wait));
        offset = await offsetNow().catch(() => offset);
      }
    }
  } finally {
    await fh.close();
  }
  forget(opts.env, opts.migrationId);
}
