// The object store as a bucket of any S3-compatible service (AWS S3, MinIO, Ceph, R2, ...),
// through the official SDK: a put is a multipart upload (@aws-sdk/lib-storage) fed from the
// stream as it arrives, so an object of any size passes through in parts of `partSize`,
// `queueSize` of them in flight. The endpoint is the operator's setting, never a user's, so
// these requests do not go through the SSRF guard (lib/outbound).
import { pipeline } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { Upload } from "@aws-sdk/lib-storage";
import { checkExpected, checkKey, measuring, ObjectStoreError, type ObjectStore } from "./object-store.ts";

export interface S3StoreSettings {
  bucket: string;
  /** Unset: AWS S3 of the region. */
  endpoint?: string;
  region: string;
  /** Unset: the SDK's own chain (environment, instance role, ...). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Keys are stored under this prefix ("" or "berth/"). */
  prefix?: string;
  /** Bucket in the path (http://host/bucket/key) rather than the host name; default: true with an endpoint. */
  forcePathStyle?: boolean;
  /** Multipart part size in bytes (default 16 MiB; S3's minimum is 5 MiB). */
  partSize?: number;
  /** Parts uploaded at once (default 4). */
  queueSize?: number;
}

const notFound = (error: unknown) =>
  error instanceof S3ServiceException && (error.name === "NoSuchKey" || error.name === "NotFound" || error.$metadata.httpStatusCode === 404);

export function createS3ObjectStore(settings: S3StoreSettings): ObjectStore & { client: S3Client } {
  const client = new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle ?? settings.endpoint !== undefined,
    ...(settings.accessKeyId && settings.secretAccessKey ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } } : {}),
    // Only the checksums a request needs: S3-compatible services do not all take the SDK's
    // default CRC32 trailers, and the store computes its own SHA-256 anyway.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const prefix = settings.prefix ?? "";
  const Bucket = settings.bucket;
  const keyOf = (key: string) => `${prefix}${checkKey(key)}`;

  return {
    kind: "s3",
    location: `s3://${Bucket}/${prefix}`,
    client,

    async put(key, body, options = {}) {
      const Key = keyOf(key);
      const measure = measuring(options.expect?.size_bytes);
      // The measured stream is the upload's body; a failing source (or too many bytes) fails it.
      pipeline(body, measure, () => undefined);
      const upload = new Upload({
        client,
        params: { Bucket, Key, Body: measure, ContentType: "application/octet-stream" },
        partSize: settings.partSize ?? 16 * 1024 * 1024,
        queueSize: settings.queueSize ?? 4,
        leavePartsOnError: false,
      });
      await upload.done();
      const got = measure.result();
      try {
        checkExpected(key, got, options.expect);
      } catch (error) {
        await client.send(new DeleteObjectCommand({ Bucket, Key })).catch(() => undefined);
        throw error;
      }
      return got;
    },

    async get(key, options = {}) {
      const range = options.range;
      try {
        const res = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
        return res.Body as NodeJS.ReadableStream;
      } catch (error) {
        if (notFound(error)) throw new ObjectStoreError("object_not_found", `no object ${key}`);
        throw error;
      }
    },

    async head(key) {
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket, Key: keyOf(key) }));
        return { size_bytes: res.ContentLength ?? 0, modified_at: res.LastModified ?? new Date(0) };
      } catch (error) {
        if (notFound(error)) return null;
        throw error;
      }
    },

    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(key) }));
    },

    parts: {
      async start(key) {
        const res = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: keyOf(key), ContentType: "application/octet-stream" }));
        if (!res.UploadId) throw new Error("the bucket answered no UploadId");
        return res.UploadId;
      },
      partUrl: (key, uploadId, partNumber, expiresIn) => getSignedUrl(client, new UploadPartCommand({ Bucket, Key: keyOf(key), UploadId: uploadId, PartNumber: partNumber }), { expiresIn }),
      async complete(key, uploadId, parts) {
        const sorted = [...parts].sort((a, b) => a.part_number - b.part_number).map((p) => ({ PartNumber: p.part_number, ETag: p.etag }));
        await client.send(new CompleteMultipartUploadCommand({ Bucket, Key: keyOf(key), UploadId: uploadId, MultipartUpload: { Parts: sorted } }));
      },
      async abort(key, uploadId) {
        await client.send(new AbortMultipartUploadCommand({ Bucket, Key: keyOf(key), UploadId: uploadId })).catch(() => undefined);
      },
    },
  };
}
