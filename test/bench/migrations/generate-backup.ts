// A large ERP backup for bench:migrations, made as the vendor's database manager makes one: a
// zip with dump.sql first (deflated), manifest.json, then filestore/ab/ab12... files. The dump
// has the tables the analysis decodes (modules, users, 200,000 partners, attachments) and one
// big table it skips (mail_message) whose rows mix words and random hex, so it compresses
// about as well as a real dump. The file store is random bytes stored as is.
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { deflateRawSync } from "node:zlib";
import yazl from "yazl";
import { OFFICIAL_MODULES } from "../../../apps/control-plane/src/modules/migrations/analysis/official-modules.ts";

export interface GeneratedBackup {
  dumpBytes: number;
  filestoreBytes: number;
  internalUsers: number;
  partners: number;
  modules: number;
}

const BLOCK = 4 << 20;

/** One block of mail_message rows: different ids, words and 64 hex characters per row. */
function messageBlock(seed: number): Buffer {
  const rows: string[] = [];
  let size = 0;
  const hex = randomBytes(BLOCK / 4).toString("hex");
  for (let i = 0; size < BLOCK; i++) {
    const row = `${seed * 100000 + i}\tRe: order S${(seed * 7919 + i) % 99991} \\n<p>Dear customer, your delivery ${hex.slice((i * 64) % (hex.length - 64), ((i * 64) % (hex.length - 64)) + 64)} is on its way.</p>\t2024-03-${String((i % 28) + 1).padStart(2, "0")} 10:00:00\tcomment\n`;
    rows.push(row);
    size += Buffer.byteLength(row);
  }
  return Buffer.from(rows.join(""));
}

function* dumpParts(dumpTarget: number, facts: GeneratedBackup): Generator<Buffer> {
  const head = [
    "--\n-- PostgreSQL database dump\n--\n\n\\restrict benchkey\n",
    "-- Dumped from database version 16.4 (Debian 16.4-1.pgdg120+1)\n-- Dumped by pg_dump version 16.10\n\n",
    "SET statement_timeout = 0;\nSET client_encoding = 'UTF8';\n\n",
    "CREATE TABLE public.ir_module_module (id integer NOT NULL, name character varying NOT NULL, state character varying, latest_version character varying, license character varying);\n\n",
  ].join("");
  yield Buffer.from(head);
  const names = [...OFFICIAL_MODULES].slice(0, 300).concat(Array.from({ length: 25 }, (_, i) => `acme_custom_${i}`));
  facts.modules = names.length;
  yield Buffer.from(
    `COPY public.ir_module_module (id, name, state, latest_version, license) FROM stdin;\n${names
      .map((n, i) => `${i + 1}\t${n}\tinstalled\t${n === "base" ? "17.0.1.3" : "17.0.1.0"}\tLGPL-3\n`)
      .join("")}${Array.from({ length: 400 }, (_, i) => `${1000 + i}\tnot_installed_${i}\tuninstalled\t\\N\tLGPL-3\n`).join("")}\\.\n\n`,
  );
  facts.internalUsers = 50;
  yield Buffer.from(
    `COPY public.res_users (id, login, active, share, partner_id) FROM stdin;\n${Array.from({ length: 80 }, (_, i) => `${i + 1}\tuser${i}\t${i < 70 ? "t" : "f"}\t${i >= 50 && i < 70 ? "t" : "f"}\t${i + 1}\n`).join("")}\\.\n\n`,
  );
  facts.partners = 200_000;
  for (let start = 0; start < facts.partners; start += 10_000) {
    let rows = start === 0 ? "COPY public.res_partner (id, name, email, active, is_company, street) FROM stdin;\n" : "";
    for (let i = start; i < start + 10_000; i++) rows += `${i + 1}\tPartner ${i}\tpartner${i}@example.com\tt\t${i % 5 === 0 ? "t" : "f"}\t${i} Rue de la Loi\\tBruxelles\n`;
    yield Buffer.from(rows);
  }
  yield Buffer.from("\\.\n\nCOPY public.ir_attachment (id, name, store_fname, file_size, mimetype) FROM stdin;\n");
  for (let i = 0; i < 10_000; i++) {
    const sha = createHash("sha1").update(String(i)).digest("hex");
    yield Buffer.from(`${i + 1}\tfile${i}.pdf\t${sha.slice(0, 2)}/${sha}\t${100_000 + i}\tapplication/pdf\n`);
  }
  yield Buffer.from("\\.\n\nCOPY public.mail_message (id, body, date, message_type) FROM stdin;\n");
  let written = 0;
  const blocks = [messageBlock(1), messageBlock(2), messageBlock(3)];
  for (let b = 0; written < dumpTarget; b++) {
    const block = blocks[b % blocks.length]!;
    written += block.length;
    yield block;
  }
  yield Buffer.from("\\.\n\n\\unrestrict benchkey\n--\n-- PostgreSQL database dump complete\n--\n");
}

/** Writes a zip of about `totalMb` MB to `file`: half dump (compressed), half file store. */
export async function generateBackup(file: string, totalMb: number): Promise<GeneratedBackup> {
  const ratio = BLOCK / deflateRawSync(messageBlock(9)).length;
  const dumpTarget = Math.round((totalMb / 2) * 2 ** 20 * ratio);
  const facts: GeneratedBackup = { dumpBytes: 0, filestoreBytes: 0, internalUsers: 0, partners: 0, modules: 0 };
  const zip = new yazl.ZipFile();
  const done = pipeline(zip.outputStream as Readable, createWriteStream(file, { highWaterMark: 1 << 20 }));
  const dump = Readable.from(dumpParts(dumpTarget, facts)).on("data", (c: Buffer) => (facts.dumpBytes += c.length));
  zip.addReadStream(dump, "dump.sql");
  zip.addBuffer(Buffer.from(JSON.stringify({ odoo_dump: "1", db_name: "bench", version: "17.0", pg_version: "16.4", modules: {} })), "manifest.json");
  const fileSize = 1 << 20;
  const files = Math.max(1, Math.round((totalMb / 2) * ((1 << 20) / fileSize)));
  for (let i = 0; i < files; i++) {
    // Named by the SHA-1 of a seed, not of the bytes: the bytes are made only when yazl reads them.
    const sha = createHash("sha1").update(`file ${i}`).digest("hex");
    zip.addReadStream(Readable.from((function* () { yield randomBytes(fileSize); })()), `filestore/${sha.slice(0, 2)}/${sha}`, { compress: false, size: fileSize });
    facts.filestoreBytes += fileSize;
  }
  zip.end();
  await done;
  return facts;
}
