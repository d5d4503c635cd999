// A statement's text as findings quote it and psql-script-hazards.ts matches it: its first
// KEPT_TEXT characters, bytes read as latin1, whitespace runs collapsed to one space, comments
// left out (a block comment counts as whitespace). The lexer does not add it byte by byte: the
// bytes of the current chunk from `from` on belong to it until a comment, the whitespace between
// continued strings, a meta-command or COPY data stops the run; runs are noted as ranges and
// made into text only when something reads it (take: a finding, a statement the rules match
// exactly) or the chunk ends. Most statements are never made into text at all.
import { isSpace, latin1 } from "./psql-script-bytes.ts";
import { KEPT_TEXT } from "./psql-script-hazards.ts";

export class StatementText {
  value = "";
  /** Nothing was cut (the statement's text is all in `value`). */
  whole = true;
  /** Whitespace came after the last byte kept. */
  private space = false;
  /** The chunk being read, its stopped runs not yet added (start, end pairs), the open run's start (-1: none). */
  private chunk: Uint8Array = new Uint8Array(0);
  private readonly runs: number[] = [];
  private from = -1;

  /** A new chunk: its bytes from `from` belong to the text (or none, -1) until stop(). */
  begin(chunk: Uint8Array, from: number): void {
    this.chunk = chunk;
    this.from = from;
  }

  /** Makes the text up to `i` (exclusive); the open run goes on from `i`. */
  take(i: number): void {
    this.addRuns();
    if (this.from >= 0 && this.from < i) {
      this.addRange(this.from, i);
      this.from = i;
    }
  }

  /** The bytes from `i` on are not text (until resume). */
  stop(i: number): void {
    if (this.from >= 0 && this.from < i && !this.full()) this.runs.push(this.from, i);
    this.from = -1;
  }

  /** The bytes from `i` on are text again. */
  resume(i: number): void {
    this.from = i;
  }

  /** At the chunk's end: its runs made into text, the chunk let go. */
  close(end: number): void {
    this.take(end);
    this.from = -1;
    this.chunk = new Uint8Array(0);
  }

  /** One byte from elsewhere than the chunk's runs (the open run must be stopped or taken up to here). */
  add(b: number): void {
    this.addRuns();
    if (this.value.length >= KEPT_TEXT) {
      this.whole = false;
      return;
    }
    if (isSpace(b)) {
      this.space = this.value !== "";
      return;
    }
    this.value += this.space ? ` ${String.fromCharCode(b)}` : String.fromCharCode(b);
    this.space = false;
  }

  /** A new statement, whose text starts at `from` (-1: not yet). */
  reset(from: number): void {
    this.value = "";
    this.whole = true;
    this.space = false;
    this.runs.length = 0;
    this.from = from;
  }

  /** Nothing more can change the text. */
  private full(): boolean {
    return !this.whole && this.value.length >= KEPT_TEXT;
  }

  private addRuns(): void {
    const runs = this.runs;
    for (let k = 0; k < runs.length; k += 2) this.addRange(runs[k]!, runs[k + 1]!);
    runs.length = 0;
  }

  /** chunk[s, e) as add() would take each byte, a slice per run of non-space bytes. */
  private addRange(s: number, e: number): void {
    const chunk = this.chunk;
    let k = s;
    while (k < e) {
      if (this.value.length >= KEPT_TEXT) {
        this.whole = false;
        return;
      }
      if (isSpace(chunk[k]!)) {
        this.space = this.value !== "";
        k++;
        continue;
      }
      // The first byte goes in (after the pending space), the next ones while there is room.
      const first = this.value.length + (this.space ? 1 : 0) + 1;
      const limit = Math.min(e, k + 1 + Math.max(0, KEPT_TEXT - first));
      let r = k + 1;
      while (r < limit && !isSpace(chunk[r]!)) r++;
      this.value += (this.space ? " " : "") + latin1(chunk, k, r);
      this.space = false;
      k = r;
    }
  }
}
