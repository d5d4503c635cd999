// The resumable upload tiers (tier_2 and up): the tus protocol 1.0 (creation, termination,
// concatenation) through @tus/server, its chunks written to a folder of this replica
// (@tus/file-store). A client that loses its connection asks HEAD for Upload-Offset and sends
// PATCH from there. When the last byte arrives, the file is streamed into the backup store
// through the integrity check (backup-receipt.ts receive) and the tus file removed; a
// mismatch answers 422 with the error body and keeps nothing.
//
// Parallel parts (tiers 3 and 4 on a local backup store, any resumable tier really): tus's
// concatenation extension, which @tus/server does not implement, is done here around it.
// `Upload-Concat: partial` creates a part (its own Upload-Length; id "<migration>.p<32 hex>"),
// each part is sent and resumed like any upload, in parallel; `Upload-Concat: final;<url>
// <url>…` joins the complete parts in the order given, streamed through the same integrity
// check into the store, and removes them; the final upload gets an id of its own (its
// Location), which answers HEAD like a finished upload.
//
// URLs: POST {prefix}/{migration_id}/upload/tus creates the upload (Upload-Length must be the
// size given to upload/init; Upload-Metadata may carry filename and sha256); the upload is
// {prefix}/{migration_id}/upload/tus/{upload_id} (HEAD, PATCH, DELETE). Upload ids are
// "<migration id>.<32 hex>" (parts: ".p<32 hex>"). The lock between concurrent PATCHes of one
// upload is in memory: one replica serves an upload (uploads are sticky to the replica
// holding the file).
//
// Files are bounded: a migration has at most one unfinished upload that is not a part (a new
// creation removes the earlier one, as a new upload/init does), its parts are bounded by
// upload-limits.ts, and the cleanup job removes any upload file that received nothing for
// UNFINISHED_UPLOAD_IDLE_MS (upload-limits.ts, 24 hours), whatever its migration became.
//
// A cancel (or a new upload/init) may come while a chunk is on its way. The route checks the
// migration before handing a request to tus, and a chunk that has arrived is checked again:
// either way the answer is the route's refusal (409 upload_not_initialized for a cancelled
// migration), never tus's 404 or 500 about a file removed under the request. For that, the
// files of a migration whose requests are being served are removed once the last of them is
// over, not while tus looks them up or writes into them.
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import path from "node:path";
import { Server, EVENTS } from "@tus/server";
import { FileStore } from "@tus/file-store";
import { DomainError } from "../../../lib/errors.ts";
import { httpStatusOf } from "../../../lib/error-codes.ts";
import { REQUEST_ID_HEADER } from "../../../lib/request-id.ts";
import type { MigrationRow } from "../record/migrations.repo.ts";
import type { BackupReceipt } from "./backup-receipt.ts";
import { notUploading } from "./upload-state.ts";
import { MAX_PARTS_PER_ORGANIZATION, MAX_PARTS_PER_UPLOAD } from "./upload-limits.ts";

// Types of the raw request and response tus handles (node:http is imported for its types only: requests go out through the request guard).
type IncomingMessage = import("node:http").IncomingMessage;
type ServerResponse = import("node:http").ServerResponse;

export const UPLOAD_ID = /^[0-9a-f-]{36}\.p?[0-9a-f]{32}$/;
/** The header a partial creation is marked with on its way to @tus/server (which refuses Upload-Concat). */
const PART_MARK = "x-berth-upload-part";
export const isPart = (uploadId: string) => uploadId.charAt(37) === "p";

/** Why `uploadId` is not (any more) an upload of this migration: the current one or one of its parts (a new upload/init removes every earlier file). */
export function notThisUpload(m: MigrationRow, uploadId: string): DomainError | null {
  if (uploadId === m.uploadId || (isPart(uploadId) && uploadId.slice(0, 36) === m.id)) return null;
  return new DomainError("not_found", "Upload not found: it was replaced by a newer upload/init, or finished");
}

/** The error body of the API (as the error handler answers it) for a refusal tus passes on. */
function errorBody(error: DomainError, res: ServerResponse | undefined) {
  const requestId = res?.getHeader(REQUEST_ID_HEADER);
  return JSON.stringify({ error: error.code, message: error.message, ...(typeof requestId === "string" ? { request_id: requestId } : {}) });
}

/** The Node response under tus's web request (srvx keeps it there; @tus/server reads it the same way). */
const nodeResponse = (req: Request): ServerResponse | undefined => (req as { runtime?: { node?: { res?: ServerResponse } } }).runtime?.node?.res;

/** The file store, checking after each chunk that its migration still takes it (a cancel may have come while it was sent). */
class CheckedFileStore extends FileStore {
  constructor(
    options: ConstructorParameters<typeof FileStore>[0],
    private readonly check: (uploadId: string) => Promise<void>,
  ) {
    super(options);
  }

  override async write(readable: Parameters<FileStore["write"]>[0], id: string, offset: number): Promise<number> {
    const end = await super.write(readable, id, offset);
    await this.check(id);
    return end;
  }
}

export function createTusUploads(deps: {
  dir: string;
  prefix: string;
  receipt: Pick<BackupReceipt, "noteUploadId" | "noteProgress" | "receive">;
  /** Ids of the organisation's migrations taking an upload now (the parts' bound per organisation). */
  uploadingIds: (organizationId: string) => Promise<string[]>;
  byId: (id: string) => Promise<MigrationRow | undefined>;
}) {
  // Made on first use: the file store creates its folder, which a control plane that never
  // receives a resumable upload (scripts, most tests) should not leave behind.
  let made: { server: Server; datastore: FileStore } | null = null;
  const tus = () => (made ??= make());
  const migrationOf = (uploadId: string) => uploadId.slice(0, 36);
  const idFromUrl = (url: string) => /\/upload\/tus\/([^/?#]+)/.exec(url)?.[1];
  /** Bytes each part of a migration has received, for its progress (this replica's parts). */
  const partOffsets = new Map<string, Map<string, number>>();
  /** Notes a part's offset; what all the parts of its migration have received together. */
  const partsReceived = (uploadId: string, offset: number) => {
    const parts = partOffsets.get(migrationOf(uploadId)) ?? new Map<string, number>();
    partOffsets.set(migrationOf(uploadId), parts.set(uploadId, offset));
    return [...parts.values()].reduce((a, b) => a + b, 0);
  };
  /**
   * Per organisation, the creation of a part under way: one at a time, so each check of the
   * bounds counts every part created before it, its upload's and its organisation's (with turns
   * per migration, two migrations' parts both passed at the organisation's last free place).
   * The parts are files of this replica's folder, counted there: the turns are this replica's.
   */
  const creatingPart = new Map<string, Promise<unknown>>();
  /** Per migration, the tus requests being served on this replica and the removals waiting for them to end. */
  const serving = new Map<string, { requests: number; removals: (() => Promise<void>)[] }>();

  /** Throws the route's refusal when the migration no longer takes this upload's bytes. */
  async function stillTaken(uploadId: string): Promise<void> {
    const m = await deps.byId(migrationOf(uploadId));
    if (!m) throw new DomainError("not_found", "Migration not found");
    const refused = notUploading(m) ?? notThisUpload(m, uploadId);
    if (refused) throw refused;
  }

  function make() {
    const datastore = new CheckedFileStore({ directory: deps.dir }, stillTaken);
    const server = new Server({
      path: deps.prefix,
      datastore,
      // Progress (bytes_received, migration_progress) at most once a second per upload.
      postReceiveInterval: 1000,
      // The upload URL is absolute on the origin the client used (Host, and X-Forwarded-* are ignored).
      generateUrl: (_req, { proto, host, id }) => `${proto}://${host}${deps.prefix}/${migrationOf(id)}/upload/tus/${id}`,
      getFileIdFromRequest: (req) => {
        const id = idFromUrl(req.url);
        return id && UPLOAD_ID.test(id) ? id : undefined;
      },
      namingFunction: (req) => {
        const m = /\/([0-9a-f-]{36})\/upload\/tus\/?(?:[?#]|$)/.exec(req.url);
        if (!m) throw { status_code: 404, body: JSON.stringify({ error: "not_found", message: "Migration not found" }) };
        return `${m[1]}.${req.headers.get(PART_MARK) ? "p" : ""}${randomBytes(16).toString("hex")}`;
      },
      // The API's refusals (a chunk that arrived for a cancelled migration) in the API's words.
      onResponseError(req, error) {
        if (error instanceof DomainError) return { status_code: httpStatusOf(error.code), body: errorBody(error, nodeResponse(req)) };
        return undefined;
      },
      async onUploadCreate(_req, upload) {
        await deps.receipt.noteUploadId(migrationOf(upload.id), upload.id);
        return {};
      },
      async onUploadFinish(_req, upload) {
        // A part waits for the final concatenation; the migration's progress counts it whole.
        if (isPart(upload.id)) {
          await deps.receipt.noteProgress(migrationOf(upload.id), partsReceived(upload.id, upload.size ?? upload.offset));
          return {};
        }
        const m = await deps.byId(migrationOf(upload.id));
        const file = path.join(deps.dir, upload.id);
        try {
          if (!m || m.uploadId !== upload.id) throw new DomainError("migration_not_uploadable", "This upload was replaced or cancelled; nothing was kept");
          const row = await deps.receipt.receive(m, createReadStream(file, { highWaterMark: 1 << 20 }), { size: upload.size ?? upload.offset, sha256: upload.metadata?.sha256 ?? null });
          return { status_code: 204, headers: { "x-migration-status": row.status, "x-checksum-sha256": row.storedSha256 ?? "" } };
        } catch (error) {
          if (error instanceof DomainError) {
            const status = error.code === "upload_checksum_mismatch" ? 422 : 409;
            throw { status_code: status, body: JSON.stringify({ error: error.code, message: error.message }) };
          }
          throw error;
        } finally {
          await datastore.remove(upload.id).catch(() => undefined);
        }
      },
    });
    server.on(EVENTS.POST_RECEIVE, (_req, upload) => {
      const received = isPart(upload.id) ? partsReceived(upload.id, upload.offset) : upload.offset;
      void deps.receipt.noteProgress(migrationOf(upload.id), received).catch(() => undefined);
    });
    return { server, datastore };
  }

  /**
   * Every upload file (and its metadata) of a migration: a new upload/init or a cancel replaces
   * them all. While requests of the migration are being served, the files there now are removed
   * once the last one is over (`now`: at once, by the request that is done with them).
   */
  async function discardAll(migrationId: string, now = false): Promise<void> {
    partOffsets.delete(migrationId);
    const names = (await readdir(deps.dir).catch(() => [] as string[])).filter((n) => n.startsWith(`${migrationId}.`));
    const remove = async () => {
      for (const name of names) {
        const id = name.replace(/\.json$/, "");
        if (made && UPLOAD_ID.test(id)) await made.datastore.remove(id).catch(() => undefined);
        await rm(path.join(deps.dir, name), { force: true });
      }
    };
    await removeWhenIdle(migrationId, remove, now);
  }

  /** Runs `remove` now, or once the requests of the migration being served are over. */
  async function removeWhenIdle(migrationId: string, remove: () => Promise<void>, now = false): Promise<void> {
    const busy = serving.get(migrationId);
    if (busy && !now) busy.removals.push(remove);
    else await remove();
  }

  /** Removes an upload's file and its metadata; none there is no error. */
  async function removeUpload(id: string): Promise<void> {
    if (made) await made.datastore.remove(id).catch(() => undefined);
    await rm(path.join(deps.dir, id), { force: true });
    await rm(path.join(deps.dir, `${id}.json`), { force: true });
  }

  /** Runs a tus request of a migration (from before its state is checked to its answer); removals of its files wait for it. */
  async function serve<T>(migrationId: string, work: () => Promise<T>): Promise<T> {
    const busy = serving.get(migrationId) ?? { requests: 0, removals: [] };
    serving.set(migrationId, busy);
    busy.requests += 1;
    try {
      return await work();
    } finally {
      busy.requests -= 1;
      if (busy.requests === 0) {
        serving.delete(migrationId);
        for (const remove of busy.removals) await remove().catch(() => undefined);
      }
    }
  }

  /** The parts (ids) in the folder of the migrations `migrationIds` accepts. */
  async function partsIn(accepts: (migrationId: string) => boolean): Promise<string[]> {
    const names = await readdir(deps.dir).catch(() => [] as string[]);
    return names.filter((n) => UPLOAD_ID.test(n) && isPart(n) && accepts(migrationOf(n)));
  }

  /**
   * Refuses a new part of `length` bytes for the migration past the bounds (upload-limits.ts):
   * MAX_PARTS_PER_UPLOAD parts of its upload, the declared size for its parts together,
   * MAX_PARTS_PER_ORGANIZATION parts of its organisation's uploads.
   */
  async function checkNewPart(m: MigrationRow, length: number): Promise<void> {
    const mine = await partsIn((id) => id === m.id);
    if (mine.length >= MAX_PARTS_PER_UPLOAD) {
      throw new DomainError("too_many_upload_parts", `This upload has ${mine.length} parts, the most one upload may have (${MAX_PARTS_PER_UPLOAD}): join them (Upload-Concat: final) or start again with upload/init`);
    }
    let bytes = length;
    for (const id of mine) bytes += (await tus().datastore.getUpload(id).catch(() => null))?.size ?? 0;
    if (bytes > m.declaredSizeBytes!) {
      throw new DomainError("upload_parts_too_large", `This upload's parts would hold ${bytes} bytes together, more than the ${m.declaredSizeBytes} declared at upload/init`);
    }
    const uploading = new Set(await deps.uploadingIds(m.organizationId));
    const theirs = await partsIn((id) => uploading.has(id));
    if (theirs.length >= MAX_PARTS_PER_ORGANIZATION) {
      throw new DomainError("too_many_upload_parts", `The organisation's uploads have ${theirs.length} parts, the most allowed at once (${MAX_PARTS_PER_ORGANIZATION}): finish or cancel some uploads first`);
    }
  }

  return {
    /**
     * Creates the migration's upload (not a part) through `create` (the tus request): the
     * earlier unfinished ones of the migration are removed (once the other requests of the
     * migration are over), so repeated creations without a byte sent leave one file, not one each.
     */
    async createUpload<T>(m: MigrationRow, create: () => Promise<T>): Promise<T> {
      const names = await readdir(deps.dir).catch(() => [] as string[]);
      const earlier = names.filter((n) => UPLOAD_ID.test(n) && !isPart(n) && migrationOf(n) === m.id);
      // At once when this creation is the migration's only request (it uses none of them).
      const alone = (serving.get(m.id)?.requests ?? 1) <= 1;
      await removeWhenIdle(
        m.id,
        async () => {
          for (const id of earlier) await removeUpload(id);
        },
        alone,
      );
      return create();
    },

    /**
     * The cleanup job's part: removes every upload file (parts too) that received nothing
     * since `idleBefore`, unless a request of its migration is being served. How many.
     */
    async sweep(idleBefore: Date): Promise<number> {
      let n = 0;
      for (const id of (await readdir(deps.dir).catch(() => [] as string[])).filter((name) => UPLOAD_ID.test(name))) {
        const times = await Promise.all([id, `${id}.json`].map((f) => stat(path.join(deps.dir, f)).then((st) => st.mtimeMs, () => 0)));
        if (Math.max(...times) >= idleBefore.getTime() || serving.has(migrationOf(id))) continue;
        await removeUpload(id);
        n++;
      }
      return n;
    },

    /**
     * Creates a part (Upload-Concat: partial) of `length` bytes through `create` (the tus
     * request), once the bounds allow it; creations of one organisation's parts take turns.
     */
    async createPart<T>(m: MigrationRow, length: number, create: () => Promise<T>): Promise<T> {
      const org = m.organizationId;
      const before = creatingPart.get(org) ?? Promise.resolve();
      const mine = before.then(async () => {
        await checkNewPart(m, length);
        return create();
      });
      const settled = mine.catch(() => undefined);
      creatingPart.set(org, settled);
      try {
        return await mine;
      } finally {
        if (creatingPart.get(org) === settled) creatingPart.delete(org);
      }
    },

    /** Hands a tus request (already authorised by the route) to the tus server; a part's creation is marked for it. */
    handle: (req: IncomingMessage, res: ServerResponse) => {
      // The mark is this module's: one sent by the client would make a part no bound counted.
      delete req.headers[PART_MARK];
      for (let i = req.rawHeaders.length - 2; i >= 0; i -= 2) if (req.rawHeaders[i]!.toLowerCase() === PART_MARK) req.rawHeaders.splice(i, 2);
      const concat = req.headers["upload-concat"];
      if (req.method === "POST" && typeof concat === "string" && concat.trim() === "partial") {
        // @tus/server reads the raw header list: the pair is replaced there too.
        delete req.headers["upload-concat"];
        req.headers[PART_MARK] = "1";
        const raw = req.rawHeaders;
        for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === "upload-concat") raw.splice(i, 2, PART_MARK, "1");
      }
      return tus().server.handle(req, res);
    },
    serve,
    dir: deps.dir,
    migrationOf,
    idFromUrl,

    /**
     * The final upload of a concatenation: the parts (upload URLs, in order) of this
     * migration, each complete, together exactly the declared size, streamed one after the
     * other through the integrity check into the store; the parts are removed whatever the
     * outcome of a check that ran (a mismatch keeps nothing, the client starts again).
     */
    async concatenate(m: MigrationRow, urls: string[], declaredSha256: string | null) {
      const ids = urls.map((u) => idFromUrl(u) ?? "");
      const bad = ids.find((id) => !UPLOAD_ID.test(id) || !isPart(id) || migrationOf(id) !== m.id);
      if (ids.length === 0 || bad !== undefined) {
        throw new DomainError("validation_error", "Upload-Concat: final; lists the URLs of this migration's parts (created with Upload-Concat: partial), separated by spaces");
      }
      if (new Set(ids).size !== ids.length) throw new DomainError("validation_error", "Upload-Concat: final; lists each part once");
      if (ids.length > MAX_PARTS_PER_UPLOAD) throw new DomainError("too_many_upload_parts", `Upload-Concat: final; lists ${ids.length} parts, more than an upload may have (${MAX_PARTS_PER_UPLOAD})`);
      const { datastore } = tus();
      const parts = [];
      for (const id of ids) {
        const upload = await datastore.getUpload(id).catch(() => null);
        if (!upload) throw new DomainError("upload_incomplete", `Part ${id} does not exist (finished, replaced or never created)`);
        if (upload.size === undefined || upload.offset !== upload.size) {
          throw new DomainError("upload_incomplete", `Part ${id} has ${upload.offset} of ${upload.size ?? "?"} bytes: send the rest (HEAD for its offset), then the final request again`);
        }
        parts.push({ id, size: upload.size });
      }
      const total = parts.reduce((a, p) => a + p.size, 0);
      if (total !== m.declaredSizeBytes) {
        throw new DomainError("upload_incomplete", `The parts hold ${total} bytes together, but upload/init declared ${m.declaredSizeBytes}`);
      }
      // The final upload is a resource of its own (its Location answers HEAD once the backup is in).
      const finalId = `${m.id}.${randomBytes(16).toString("hex")}`;
      await deps.receipt.noteUploadId(m.id, finalId);
      const joined = Readable.from(
        (async function* () {
          for (const p of parts) yield* createReadStream(path.join(deps.dir, p.id), { highWaterMark: 1 << 20 });
        })(),
      );
      try {
        return { finalId, row: await deps.receipt.receive(m, joined, { size: total, sha256: declaredSha256 }) };
      } finally {
        await discardAll(m.id, true);
      }
    },

    /** Removes the unfinished upload's files (all of its migration's: parts too); none there is no error. */
    async discard(uploadId: string): Promise<void> {
      if (!UPLOAD_ID.test(uploadId)) return;
      await discardAll(migrationOf(uploadId));
    },
  };
}
export type TusUploads = ReturnType<typeof createTusUploads>;
