// An object store for large files (backups today, uploaded ERP backups next): put a stream
// under a key and get back its size and SHA-256, read it back whole or by byte range, ask
// whether it is there, delete it. Nothing is ever held whole in memory. Two kinds: a folder
// on the control plane's disk (local-store.ts) and any S3-compatible bucket (s3-store.ts);
// index.ts picks one from the settings (config.ts, backupStoreSettings).
import { createHash } from "node:crypto";
import { Transform } from "node:stream";

export interface StoredObject {
  size_bytes: number;
  /** Lowercase hex. */
  sha256: string;
}

export interface ObjectInfo {
  size_bytes: number;
  modified_at: Date;
}

/** Bytes start..end, both included (as HTTP Range says them). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface PutOptions {
  /**
   * What the sender declared. The store measures while it writes: more bytes than declared
   * stop the write at once; a different size or digest at the end removes what was written.
   * Either way put rejects with ObjectStoreError "object_mismatch" and nothing stays stored.
   */
  expect?: StoredObject;
}

/**
 * Multipart uploads straight from a client to the bucket (S3 stores only): the control plane
 * starts one, hands out presigned URLs of its parts, and completes it from the parts' ETags.
 */
export interface PartUploads {
  start(key: string): Promise<string>;
  /** A presigned PUT URL for part `partNumber` (1-based), valid `expiresInSeconds`. */
  partUrl(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string>;
  complete(key: string, uploadId: string, parts: { part_number: number; etag: string }[]): Promise<void>;
  /** Drops the parts sent so far; an upload already gone is no error. */
  abort(key: string, uploadId: string): Promise<void>;
}

export interface ObjectStore {
  readonly kind: "local" | "s3";
  /** Client-side parallel multipart uploads, where the store has them (S3). */
  readonly parts?: PartUploads;
  /** Where the objects are, for logs and messages: a folder, or s3://bucket/prefix. */
  readonly location: string;
  /** Streams `body` to `key` (replacing what was there once it is complete); its size and SHA-256. */
  put(key: string, body: NodeJS.ReadableStream, options?: PutOptions): Promise<StoredObject>;
  /** The object's bytes, or the range of them; ObjectStoreError "object_not_found" when there is none. */
  get(key: string, options?: { range?: ByteRange }): Promise<NodeJS.ReadableStream>;
  head(key: string): Promise<ObjectInfo | null>;
  /** Removes the object; nothing there is no error. */
  delete(key: string): Promise<void>;
}

export type ObjectStoreErrorCode = "object_not_found" | "object_mismatch" | "invalid_key";

export class ObjectStoreError extends Error {
  constructor(
    readonly code: ObjectStoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ObjectStoreError";
  }
}

/** Keys are relative paths of safe segments: a-z A-Z 0-9 . _ - separated by single slashes, no "." or ".." segment. */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

export function checkKey(key: string): string {
  const segments = key.split("/");
  if (key.length > 1024 || segments.some((s) => !SEGMENT.test(s) || s === "." || s === "..")) {
    throw new ObjectStoreError("invalid_key", `${JSON.stringify(key.slice(0, 100))} is not a valid object key`);
  }
  return key;
}

/**
 * A pass-through that hashes and counts what flows through it. With `limit`, the first byte
 * past it fails the stream (a sender that declared less than it sends is stopped early).
 */
export function measuring(limit?: number): Transform & { result(): StoredObject } {
  const hash = createHash("sha256");
  let size = 0;
  let digest: string | null = null;
  const t = new Transform({
    // Bigger buffers than the default 16 KiB: fewer, larger writes to disk or to the network.
    highWaterMark: 1 << 20,
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (limit !== undefined && size > limit) {
        callback(new ObjectStoreError("object_mismatch", `more than the declared ${limit} bytes arrived`));
        return;
      }
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  return Object.assign(t, {
    result(): StoredObject {
      digest ??= hash.digest("hex");
      return { size_bytes: size, sha256: digest };
    },
  });
}

/** Throws "object_mismatch" when what was stored is not what was declared. */
export function checkExpected(key: string, got: StoredObject, expect: StoredObject | undefined): void {
  if (expect === undefined) return;
  if (got.size_bytes !== expect.size_bytes || got.sha256 !== expect.sha256.toLowerCase()) {
    throw new ObjectStoreError(
      "object_mismatch",
      `${key}: received ${got.size_bytes} bytes with sha256 ${got.sha256}, but ${expect.size_bytes} bytes with sha256 ${expect.sha256} were declared`,
    );
  }
}
