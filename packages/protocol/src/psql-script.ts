// Reads a plain SQL dump as psql reads it (src/fe_utils/psqlscan.l and psql's COPY handling),
// chunk by chunk, keeping only the lexer's state: which quote, comment or dollar-quoted body it
// is in, COPY ... FROM stdin data (which starts after a real, complete COPY statement and ends
// at a line "\."), and what the current statement is (psql-script-hazards.ts). A backslash that
// psql would read as a meta-command (at a line's start, after spaces, after a statement on the
// same line) is a finding unless it is pg_dump's own \restrict / \unrestrict line; so is every
// statement that reaches the server's programs or files or changes roles.
//
// Where psql releases read the same text differently (a quote right after a number: `1e'...'`
// is an E'' string for psql 15 and a plain one for 16; PostgreSQL 16's `0x$$`), the text is
// a finding ("ambiguous") rather than a guess. The scanner reads standard_conforming_strings
// as on (pg_dump's `SET standard_conforming_strings = on;`) and client_encoding as UTF8; a
// statement that changes either is a finding too (session_setting), as the rest would then
// be read otherwise by psql.
//
// Both the agent (refusing a dump before psql runs it) and the control plane (reporting it in a
// migration's analysis) use it, so what is refused is what was reported.
//
// The reader is split by what it reads: psql-script-lexer.ts (the state and what all states
// share), psql-script-sql.ts (plain SQL), psql-script-quoted.ts (strings, dollar quotes,
// comments), psql-script-lines.ts (meta-commands, COPY data), psql-script-scan.ts (dispatch).
import { NL } from "./psql-script-bytes.ts";
import { Lexer, META, type PsqlFinding, type PsqlResults } from "./psql-script-lexer.ts";
import { finish, scan } from "./psql-script-scan.ts";

export { ALLOWED_EXTENSIONS, CLIENT_SIDE_KINDS, type PsqlFindingKind } from "./psql-script-hazards.ts";
export type { PsqlFinding } from "./psql-script-lexer.ts";

export interface PsqlScriptOptions {
  /** Stop at the first finding (the agent) or go on and collect them (the analysis). */
  stopAtFirst?: boolean;
  /** Findings kept (the count goes on); 20 by default. */
  maxFindings?: number;
  /**
   * psql 14 and later do not end a CREATE FUNCTION ... BEGIN ATOMIC at the semicolons of its
   * body (psqlscan.l begin_depth); older ones do. True (the default) reads as 14 and later.
   */
  beginAtomic?: boolean;
}

/** An ALTER statement is held back this long to see whether it is only an OWNER TO. */
const HOLD_MAX = 4096;

/** A streaming reader of a psql script: push() each chunk in order, then end(). */
export class PsqlScript implements PsqlResults {
  readonly findings: PsqlFinding[] = [];
  findingCount = 0;
  /** Byte ranges of pg_dump's own \restrict / \unrestrict lines seen so far (the agent blanks them). */
  readonly allowedMeta: { start: number; end: number }[] = [];
  /** Byte ranges of ALTER ... OWNER TO statements (StatementRules.ownerChange; the agent blanks them). */
  readonly ownerChanges: { start: number; end: number }[] = [];
  /** Lines of COPY data seen (for the record). */
  copyRows = 0;

  private readonly lx: Lexer;
  private afterNul = false;

  constructor(options: PsqlScriptOptions = {}) {
    this.lx = new Lexer(this, options.stopAtFirst ?? false, options.maxFindings ?? 20, options.beginAtomic ?? true);
  }

  /** Bytes from here on are undecided (a meta-command's, a short ALTER's), not to pass yet; null when none. */
  get pendingFrom(): number | null {
    const lx = this.lx;
    if (lx.state === META) return lx.metaStart;
    if (lx.holding && lx.base - lx.stmtStart <= HOLD_MAX) return lx.stmtStart;
    lx.holding = false;
    return null;
  }

  /** The first finding, if any. */
  get first(): PsqlFinding | undefined {
    return this.findings[0];
  }

  push(chunk: Uint8Array): void {
    const lx = this.lx;
    let from = 0;
    while (!lx.stopped && from < chunk.length) {
      if (this.afterNul) {
        // psql reads lines as C strings: what follows a NUL on its line is not read.
        const nl = chunk.indexOf(NL, from);
        if (nl < 0) break;
        this.afterNul = false;
        from = nl;
      }
      const nul = chunk.indexOf(0, from);
      scan(lx, chunk, from, nul < 0 ? chunk.length : nul);
      if (nul < 0 || lx.stopped) break;
      lx.find("ambiguous", "a NUL byte, which psql drops with the rest of its line", lx.base + nul, lx.line);
      this.afterNul = true;
      from = nul + 1;
    }
    lx.base += chunk.length;
  }

  /** At the end of the dump: what psql does with what is left (it sends an unfinished statement). */
  end(): void {
    finish(this.lx);
  }
}
