// Sending a migration's backup: tier_1 as one multipart POST, the larger tiers through the
// tus 1.0 protocol (create, PATCH in chunks, HEAD to learn where to continue). Requests go
// through XMLHttpRequest, whose upload progress fetch() does not report. A tus upload's URL
// is kept in localStorage with the file's identity (name, size, last change), so after a
// reload choosing the same file again continues at the server's offset instead of anew.
import { ApiError, session } from "./api.js";

const TUS = { "Tus-Resumable": "1.0.0" };
const RESUME_PREFIX = "berth.migration-upload.";

/** One request; resolves with status, a header getter and the body text (any status). */
function send(method, url, { headers = {}, body = null, onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    if (session.token) xhr.setRequestHeader("Authorization", `Bearer ${session.token}`);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, String(v));
    if (onProgress) xhr.upload.onprogress = (ev) => onProgress(ev.loaded);
    xhr.onload = () => resolve({ status: xhr.status, header: (name) => xhr.getResponseHeader(name), text: xhr.responseText });
    xhr.onerror = () => reject(new ApiError(0, "network", "The connection to the control plane was lost."));
    xhr.onabort = () => reject(new DOMException("Paused", "AbortError"));
    if (signal) {
      if (signal.aborted) return void xhr.abort();
      signal.addEventListener("abort", () => xhr.abort(), { once: true });
    }
    xhr.send(body);
  });
}

/** The API's error from an answer: its JSON message when it has one. */
function failure(res) {
  let data = null;
  try {
    data = JSON.parse(res.text);
  } catch {
    data = null;
  }
  return new ApiError(res.status, data?.error ?? "error", typeof data?.message === "string" ? data.message : `The upload failed (HTTP ${res.status}).`);
}

/** tier_1: the file as multipart/form-data (field file) with upload progress. */
export async function directUpload(url, file, sha256, { onProgress, signal } = {}) {
  const form = new FormData();
  // The digest before the file: the server reads the fields in order.
  form.append("sha256", sha256);
  form.append("file", file, file.name);
  const res = await send("POST", url, { body: form, onProgress, signal });
  if (res.status !== 200) throw failure(res);
  return JSON.parse(res.text);
}

// ---- tus --------------------------------------------------------------------------------

const b64 = (s) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));

/** The identity a resumable upload is remembered by: same name, size and last change. */
const identity = (file) => ({ name: file.name, size: file.size, last_modified: file.lastModified });

export const resumable = {
  /** What is remembered for this migration, if it was for this very file. */
  find(migrationId, file) {
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(RESUME_PREFIX + migrationId) ?? "null");
    } catch {
      saved = null;
    }
    if (!saved) return null;
    const id = identity(file);
    return saved.name === id.name && saved.size === id.size && saved.last_modified === id.last_modified ? saved : null;
  },
  /** The file name of an unfinished upload remembered for this migration (to say which file to choose again). */
  fileName(migrationId) {
    try {
      return JSON.parse(localStorage.getItem(RESUME_PREFIX + migrationId) ?? "null")?.name ?? null;
    } catch {
      return null;
    }
  },
  remember(migrationId, file, url, sha256) {
    localStorage.setItem(RESUME_PREFIX + migrationId, JSON.stringify({ ...identity(file), url, sha256 }));
  },
  forget(migrationId) {
    localStorage.removeItem(RESUME_PREFIX + migrationId);
  },
};

/**
 * What the retry contract retries: a cut connection, a 5xx, or tus's own 409 offset conflict
 * (no API error code); an API refusal such as 409 upload_not_initialized (the migration was
 * cancelled or replaced) is final.
 */
const retryable = (err) => err instanceof ApiError && (err.status === 0 || err.status >= 500 || (err.status === 409 && err.code === "error"));

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(new DOMException("Paused", "AbortError"));
      },
      { once: true },
    );
  });

/**
 * A tus upload of `file` for one migration. start() creates it at `endpoint` (or, with
 * `url`, continues one that exists) and sends chunks until the last byte, resolving with
 * the final answer's migration status; pause() stops it at once (an AbortError from start).
 * On a network error, a 5xx or tus's 409 offset conflict it asks HEAD for the offset and
 * goes on from there, waiting 1 s, 2 s, 4 s … (at most 60 s) between tries, as upload/init's
 * contract says; an upload the server no longer takes is final.
 */
export class TusUpload {
  constructor({ migrationId, file, endpoint, url = null, sha256, chunkSize, onProgress, onRetry }) {
    Object.assign(this, { migrationId, file, endpoint, url, sha256, chunkSize, onProgress, onRetry });
    this.offset = 0;
    this.controller = null;
  }

  pause() {
    this.controller?.abort();
  }

  async start() {
    this.controller = new AbortController();
    const signal = this.controller.signal;
    if (!this.url) await this.create(signal);
    else await this.head(signal);
    let wait = 1000;
    while (this.offset < this.file.size) {
      try {
        const done = await this.patch(signal);
        wait = 1000;
        if (done) return done;
      } catch (err) {
        if (err.name === "AbortError" || !retryable(err)) throw err;
        this.onRetry?.(err, wait);
        await sleep(wait, signal);
        wait = Math.min(wait * 2, 60_000);
        await this.head(signal).catch((e) => {
          if (e.name === "AbortError" || (e instanceof ApiError && e.status >= 400 && e.status < 500)) throw e;
        });
      }
    }
    // Every byte was already there (a reload after the last chunk): the server has it.
    return { status: null };
  }

  async create(signal) {
    const metadata = `filename ${b64(this.file.name)},sha256 ${b64(this.sha256)}`;
    const res = await send("POST", this.endpoint, { headers: { ...TUS, "Upload-Length": this.file.size, "Upload-Metadata": metadata }, signal });
    if (res.status !== 201) throw failure(res);
    this.url = new URL(res.header("Location"), this.endpoint).href;
    this.offset = 0;
    resumable.remember(this.migrationId, this.file, this.url, this.sha256);
  }

  /** Asks the server how much it has; the upload may be gone (replaced, finished, cancelled): then it is forgotten here. */
  async head(signal) {
    const res = await send("HEAD", this.url, { headers: TUS, signal });
    // A HEAD answer has no body: its 409 is the API's (upload_not_initialized: cancelled or replaced).
    if (res.status === 404 || res.status === 410 || res.status === 409) {
      resumable.forget(this.migrationId);
      throw new ApiError(res.status, "upload_gone", "The unfinished upload is no longer on the server; start the upload again.");
    }
    if (res.status !== 200 && res.status !== 204) throw failure(res);
    this.offset = Number(res.header("Upload-Offset"));
    this.onProgress?.(this.offset);
  }

  /** One chunk from the current offset; the final answer's data when it was the last. */
  async patch(signal) {
    const end = Math.min(this.file.size, this.offset + this.chunkSize);
    const from = this.offset;
    const res = await send("PATCH", this.url, {
      headers: { ...TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": from },
      body: this.file.slice(from, end),
      onProgress: (loaded) => this.onProgress?.(from + loaded),
      signal,
    });
    if (res.status !== 204) {
      // The upload is over either way: a checksum mismatch keeps nothing.
      if (res.status === 422 || res.status === 404 || res.status === 410) resumable.forget(this.migrationId);
      throw failure(res);
    }
    this.offset = Number(res.header("Upload-Offset") ?? end);
    this.onProgress?.(this.offset);
    if (this.offset >= this.file.size) {
      resumable.forget(this.migrationId);
      return { status: res.header("X-Migration-Status") };
    }
    return null;
  }
}
