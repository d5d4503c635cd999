// `npm run bench:psql-script`: how fast plain dumps are read as psql reads them (@berth/protocol
// PsqlScript, which the agent refuses dumps with and the analysis reports from), against its
// first version (test/bench/psql-script/baseline/, frozen) in the same run.
//   dumps      two generated dumps of BENCH_DUMP_MB (200) MB each (psql-script/generate-dump.ts):
//              copy-heavy (rows as COPY ... FROM stdin data, pg_dump's default) and insert-style
//              (one INSERT per row, pg_dump --inserts: all of it SQL the lexer reads)
//   lexer      PsqlScript alone, the dump pushed in BENCH_CHUNK_KB (64) KB chunks, then end()
//   baseline   the first version, the same way
//   guard      the agent's guardSqlDump (sql-dump.ts): the lexer, the bytes held back and
//              released, \restrict and OWNER TO lines blanked; a stream piped through it
// Each round (BENCH_ROUNDS, 5) runs all three on both dumps, in an order that alternates from
// round to round; the medians are reported, and new/old is the median of the rounds' ratios
// (a round pairs the two; this machine's speed moves between rounds by more than they differ).
// Goal: insert-style >= 100 MB/s and copy-heavy no slower than the baseline (new/old >= 1).
// The last line is one JSON object, units in its keys.
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { PsqlScript } from "@berth/protocol";
import { guardSqlDump } from "../../apps/agent/src/executor/environment/sql-dump.ts";
import { PsqlScript as BaselineScript } from "./psql-script/baseline/psql-script.ts";
import { generateDump, type DumpKind } from "./psql-script/generate-dump.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const MB = setting("BENCH_DUMP_MB", 200);
const ROUNDS = Math.round(setting("BENCH_ROUNDS", 5));
const CHUNK = Math.round(setting("BENCH_CHUNK_KB", 64) * 1024);
const GOAL_INSERT_MB_S = 100;
const log = (line = "") => process.stdout.write(`${line}\n`);

type Reader = "lexer" | "baseline" | "guard";
const READERS: Reader[] = ["lexer", "baseline", "guard"];
const KINDS: DumpKind[] = ["copy", "insert"];
const LABEL: Record<DumpKind, string> = { copy: "copy-heavy", insert: "insert-style" };

function chunks(dump: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < dump.length; at += CHUNK) out.push(dump.subarray(at, at + CHUNK));
  return out;
}

/** What a lexer found, to check that both read the dump alike (and found nothing in it). */
function lex(make: () => Pick<PsqlScript, "push" | "end" | "findingCount" | "copyRows" | "ownerChanges" | "allowedMeta">, parts: Buffer[]): string {
  const s = make();
  for (const part of parts) s.push(part);
  s.end();
  return `${s.findingCount} findings, ${s.copyRows} COPY rows, ${s.ownerChanges.length} OWNER TO, ${s.allowedMeta.length} \\restrict lines`;
}

async function guard(parts: Buffer[], size: number): Promise<void> {
  const g = guardSqlDump({ serverMajor: 16, psqlMajor: 16 });
  let out = 0;
  await pipeline(
    Readable.from(parts),
    g,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        out += chunk.length;
        done();
      },
    }),
  );
  if (g.refused() !== null) throw new Error(`the guard refused the dump: ${g.refused()!.message}`);
  if (out !== size) throw new Error(`the guard passed ${out} bytes of ${size}`);
}

async function timed(reader: Reader, parts: Buffer[], size: number, expected: string): Promise<number> {
  const t0 = performance.now();
  if (reader === "guard") await guard(parts, size);
  else {
    const found = lex(() => (reader === "lexer" ? new PsqlScript() : new BaselineScript()), parts);
    if (found !== expected) throw new Error(`${reader} read the dump otherwise: ${found}, expected ${expected}`);
  }
  return performance.now() - t0;
}

async function main(): Promise<void> {
  log(`bench:psql-script: generating two ~${MB} MB dumps ...`);
  const dumps = new Map<DumpKind, { parts: Buffer[]; size: number; expected: string }>();
  for (const kind of KINDS) {
    const t0 = performance.now();
    const dump = generateDump(kind, MB * 1e6);
    const parts = chunks(dump);
    const expected = lex(() => new BaselineScript(), parts);
    dumps.set(kind, { parts, size: dump.length, expected });
    log(`  ${LABEL[kind]}: ${(dump.length / 1e6).toFixed(0)} MB (${expected}), made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }

  const ms = new Map<string, number[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? READERS : [...READERS].reverse();
    const line: string[] = [];
    for (const kind of round % 2 ? KINDS : [...KINDS].reverse()) {
      const d = dumps.get(kind)!;
      for (const reader of order) {
        const t = await timed(reader, d.parts, d.size, d.expected);
        ms.set(`${kind} ${reader}`, [...(ms.get(`${kind} ${reader}`) ?? []), t]);
        line.push(`${LABEL[kind]} ${reader} ${(d.size / 1e6 / (t / 1000)).toFixed(0)}`);
      }
    }
    log(`  round ${round} (MB/s): ${line.join(", ")}`);
  }

  const rate = (kind: DumpKind, reader: Reader) => dumps.get(kind)!.size / 1e6 / (median(ms.get(`${kind} ${reader}`)!) / 1000);
  const ratio = (kind: DumpKind) => {
    const [lexer, baseline] = [ms.get(`${kind} lexer`)!, ms.get(`${kind} baseline`)!];
    return median(lexer.map((t, round) => baseline[round]! / t));
  };
  log("");
  log("  MB/s (median)     lexer   baseline   new/old    guard");
  for (const kind of KINDS) {
    const [lexer, baseline, g] = [rate(kind, "lexer"), rate(kind, "baseline"), rate(kind, "guard")];
    log(`  ${LABEL[kind].padEnd(14)} ${lexer.toFixed(0).padStart(8)} ${baseline.toFixed(0).padStart(10)} ${ratio(kind).toFixed(2).padStart(9)} ${g.toFixed(0).padStart(8)}`);
  }
  const insert = rate("insert", "lexer");
  const met = insert >= GOAL_INSERT_MB_S && ratio("copy") >= 1;
  log(`insert-style ${insert.toFixed(0)} MB/s (goal >= ${GOAL_INSERT_MB_S}), copy-heavy ${ratio("copy").toFixed(2)} x the baseline (goal >= 1): ${met ? "met" : "NOT met"}`);
  log(
    JSON.stringify({
      copy_heavy_dump_mb: +(dumps.get("copy")!.size / 1e6).toFixed(1),
      insert_style_dump_mb: +(dumps.get("insert")!.size / 1e6).toFixed(1),
      rounds: ROUNDS,
      chunk_kb: CHUNK / 1024,
      copy_heavy_mb_per_s: +rate("copy", "lexer").toFixed(1),
      insert_style_mb_per_s: +insert.toFixed(1),
      copy_heavy_baseline_mb_per_s: +rate("copy", "baseline").toFixed(1),
      insert_style_baseline_mb_per_s: +rate("insert", "baseline").toFixed(1),
      copy_heavy_new_over_old: +ratio("copy").toFixed(2),
      insert_style_new_over_old: +ratio("insert").toFixed(2),
      guard_copy_heavy_mb_per_s: +rate("copy", "guard").toFixed(1),
      guard_insert_style_mb_per_s: +rate("insert", "guard").toFixed(1),
      goal_insert_style_mb_per_s: GOAL_INSERT_MB_S,
      goal_met: met,
    }),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
