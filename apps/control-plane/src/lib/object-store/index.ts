// The object store the settings ask for: an S3-compatible bucket when one is configured,
// else a folder on this machine.
import { createLocalObjectStore } from "./local-store.ts";
import type { ObjectStore } from "./object-store.ts";
import { createS3ObjectStore, type S3StoreSettings } from "./s3-store.ts";

export type ObjectStoreSettings = { kind: "local"; dir: string } | ({ kind: "s3" } & S3StoreSettings);

export function createObjectStore(settings: ObjectStoreSettings): ObjectStore {
  if (settings.kind === "local") return createLocalObjectStore(settings.dir);
  const { kind: _kind, ...s3 } = settings;
  return createS3ObjectStore(s3);
}

export { ObjectStoreError, type ByteRange, type ObjectInfo, type ObjectStore, type PartUploads, type StoredObject } from "./object-store.ts";
