// The custom-format reader against archives written byte by byte (the versions pg_dump 10 to 18
// write, and archives that end early or lie); real pg_dump archives are read in the analysis'
// tests (custom-dump-scanner.test.ts), where a PostgreSQL makes them.
import { inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ArchiveBytes, PgArchiveError, PgCustomArchive, type PgTocEntry } from "./pg-custom-archive.ts";
import { erpCustomDump, pgCustomArchive } from "./pg-custom-archive.test-helpers.ts";

/** Every chunk of `bytes` of `size` bytes, as a stream gives them. */
async function* chunked(bytes: Buffer, size = 7): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function readAll(bytes: Buffer, chunk = 7) {
  const archive = new PgCustomArchive(new ArchiveBytes(chunked(bytes, chunk)));
  const header = await archive.header();
  const entries: PgTocEntry[] = [];
  for await (const e of archive.entries()) entries.push(e);
  const data = new Map<number, Buffer[]>();
  await archive.data((s) => {
    const parts: Buffer[] = [];
    return { piece: (b) => void parts.push(Buffer.from(b)), end: () => void data.set(s.oid ?? s.dumpId, parts) };
  });
  return { header, entries, data };
}

async function failure(bytes: Buffer): Promise<PgArchiveError> {
  const err = await readAll(bytes).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PgArchiveError);
  return err as PgArchiveError;
}

describe("PgCustomArchive", () => {
  it.each([12, 13, 14, 15, 16])("reads a version 1.%i archive: header, every TOC entry's SQL, and its data", async (minor) => {
    const { header, entries, data } = await readAll(
      erpCustomDump([{ dumpId: 30, desc: "BLOBS", tag: "BLOBS", blobs: new Map([[16397, Buffer.from("hello")]]) }], { minor, databaseName: "acme_prod", serverVersion: "15.8 (Debian)" }),
    );
    expect(header).toMatchObject({ version: `1.${minor}-0`, intSize: 4, offSize: 8, compression: "gzip", databaseName: "acme_prod", serverVersion: "15.8 (Debian)", entryCount: 10 });
    expect(entries.map((e) => `${e.dumpId} ${e.desc} ${e.tag}`)).toEqual([
      "1 ENCODING ENCODING",
      "2 STDSTRINGS STDSTRINGS",
      "3 SEARCHPATH SEARCHPATH",
      "10 TABLE ir_module_module",
      "11 TABLE res_partner",
      "12 TABLE res_users",
      "30 BLOBS BLOBS",
      "20 TABLE DATA ir_module_module",
      "21 TABLE DATA res_partner",
      "22 TABLE DATA res_users",
    ]);
    expect(entries[5]).toMatchObject({ defn: expect.stringMatching(/^CREATE TABLE public\.res_users \(/), namespace: "public", section: "pre_data", owner: "odoo", withOids: false, dataState: "no_data" });
    expect(entries[9]).toMatchObject({ copyStmt: "COPY public.res_users (id, login, active, share) FROM stdin;\n", section: "data", dataState: "not_set" });
    expect(inflateSync(Buffer.concat(data.get(22)!)).toString()).toBe("2\tadmin\tt\tf\n");
    expect(inflateSync(Buffer.concat(data.get(16397)!)).toString()).toBe("hello");
  });

  it("reads an archive whatever the chunks it arrives in", async () => {
    const bytes = erpCustomDump([], { compress: false });
    for (const chunk of [1, 2, 5, 64, bytes.length]) {
      const { entries, data } = await readAll(bytes, chunk);
      expect(entries).toHaveLength(9);
      expect(Buffer.concat(data.get(20)!).toString()).toMatch(/^1\tbase\tinstalled\t17\.0\.1\.3/);
    }
  });

  it("an archive cut at any byte is malformed (truncated), never anything else", async () => {
    const whole = erpCustomDump();
    for (let cut = 5; cut < whole.length; cut += 3) {
      // The last block ends at a whole chunk list: a cut right after it reads as a shorter archive.
      const err = await readAll(whole.subarray(0, cut)).then(
        () => null,
        (e: unknown) => e,
      );
      if (err === null) continue;
      expect(err, `cut at ${cut}`).toBeInstanceOf(PgArchiveError);
      expect((err as PgArchiveError).message, `cut at ${cut}`).toMatch(/truncated|data block type|negative length/);
    }
    expect((await failure(whole.subarray(0, 40))).message).toMatch(/ends early \(truncated at byte 40\)/);
  });

  it("refuses a lying TOC count and a lying string length before allocating them", async () => {
    const count = await failure(erpCustomDump([], { statedEntries: 2_000_000_000 }));
    expect(count).toMatchObject({ code: "malformed", message: expect.stringMatching(/claims 2000000000 TOC entries/) });
    const before = process.memoryUsage().arrayBuffers;
    const huge = await failure(erpCustomDump([], { lyingDefnLength: 2 ** 31 - 1 }));
    expect(huge.message).toMatch(/a TOC string of 2147483647 bytes/);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 << 20);
    // A length within the bound but past the end is a truncated archive.
    expect((await failure(erpCustomDump([], { lyingDefnLength: 1 << 20 }))).message).toMatch(/truncated/);
    // More entries stated than written: the data blocks are then read as entries, and do not parse.
    expect((await failure(erpCustomDump([], { statedEntries: 12 }))).code).toBe("malformed");
  });

  it("refuses versions and formats it does not read, and files that are no archive", async () => {
    for (const minor of [11, 17]) expect(await failure(erpCustomDump([], { minor }))).toMatchObject({ code: "unsupported", message: expect.stringMatching(`1.${minor}-0 is not read`) });
    const tar = erpCustomDump();
    tar[10] = 3; // archTar
    expect((await failure(tar)).message).toMatch(/format 3 is not the custom format/);
    expect((await failure(Buffer.from("-- PostgreSQL database dump\n"))).message).toMatch(/does not start with PGDMP/);
    expect((await failure(pgCustomArchive([], { minor: 15, algorithm: 9 }))).message).toMatch(/unknown compression algorithm 9/);
  });
});
