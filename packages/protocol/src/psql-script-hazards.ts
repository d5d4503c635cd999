// What a statement of a plain dump may not do when it is loaded: call a server-side program or
// file, load code in an untrusted language, change roles or the server's configuration, or
// change how psql itself reads the rest of the script. The lexer (psql-script.ts) feeds each
// statement's tokens here as they stream past; only the first tokens and a short prefix of the
// text are kept, never the whole statement. pg_dump writes none of these for an Odoo database.

/** What a finding in a dump is. The first three are psql's own (client side), the rest the server's. */
export type PsqlFindingKind =
  /** A backslash command other than pg_dump's own \restrict / \unrestrict. */
  | "meta_command"
  /** A psql variable (`:DBNAME`, `:'VERSION'`): its value would be read as SQL text. */
  | "psql_variable"
  /** Text psql could read otherwise than Berth (a NUL byte, a quote right after a number, text after COPY ... FROM stdin;). */
  | "ambiguous"
  /** COPY ... TO/FROM PROGRAM. */
  | "copy_program"
  /** COPY ... TO/FROM a file of the server. */
  | "copy_file"
  /** A function, procedure, DO block or language in anything but sql / plpgsql. */
  | "untrusted_language"
  /** CREATE EXTENSION of one the ERP does not use. */
  | "extension"
  | "alter_system"
  /** SET ROLE / SESSION AUTHORIZATION, CREATE / ALTER / DROP ROLE, GRANT of a role. */
  | "role_change"
  /** A function reading or writing the server's files or other servers (lo_export, pg_read_file, dblink, ...). */
  | "server_function"
  /** Changing client_encoding or standard_conforming_strings (how psql reads what follows), set_config, pg_settings. */
  | "session_setting"
  | "load"
  /** DO: code run while loading, which nothing else here can read. */
  | "dynamic_code";

/** Kinds about psql itself rather than the server. */
export const CLIENT_SIDE_KINDS: ReadonlySet<PsqlFindingKind> = new Set(["meta_command", "psql_variable", "ambiguous"]);

/** Extensions an Odoo database has (16.0 to 19.0: pg_trgm and unaccent when enabled; plpgsql is in every database). */
export const ALLOWED_EXTENSIONS: ReadonlySet<string> = new Set(["plpgsql", "pg_trgm", "unaccent"]);
const TRUSTED_LANGUAGES: ReadonlySet<string> = new Set(["sql", "plpgsql"]);

/** Functions that reach the server's files, programs, configuration or other servers. */
const SERVER_FUNCTIONS: ReadonlySet<string> = new Set([
  "lo_import",
  "lo_export",
  "pg_read_file",
  "pg_read_binary_file",
  "pg_stat_file",
  "pg_ls_dir",
  "pg_ls_logdir",
  "pg_ls_waldir",
  "pg_ls_tmpdir",
  "pg_ls_archive_statusdir",
  "pg_ls_logicalsnapdir",
  "pg_ls_logicalmapdir",
  "pg_ls_replslotdir",
  "pg_file_write",
  "pg_file_rename",
  "pg_file_unlink",
  "pg_file_sync",
  "pg_logdir_ls",
  "pg_reload_conf",
  "pg_rotate_logfile",
  "pg_promote",
  "pg_terminate_backend",
  "pg_cancel_backend",
  "dblink",
  "dblink_exec",
  "dblink_connect",
  "dblink_connect_u",
  "dblink_open",
  "dblink_send_query",
]);
/** Words that change how psql reads the script, wherever they appear (even in a string or a function body). */
const SESSION_WORDS: ReadonlySet<string> = new Set(["client_encoding", "standard_conforming_strings", "set_config", "pg_settings"]);
/** Words checked inside strings and function bodies: a body runs later, when called. */
export const BODY_WORDS: ReadonlySet<string> = new Set([...SERVER_FUNCTIONS, ...SESSION_WORDS]);
export const BODY_WORD_MIN = Math.min(...[...BODY_WORDS].map((w) => w.length));
export const BODY_WORD_MAX = Math.max(...[...BODY_WORDS].map((w) => w.length));

/** The statements pg_dump writes that name a session setting, exactly (whitespace collapsed). */
const PG_DUMP_SESSION_STATEMENTS: readonly RegExp[] = [
  /^set client_encoding = '?utf-?8'?;$/i,
  /^set standard_conforming_strings = '?on'?;$/i,
  /^select pg_catalog\.set_config\('search_path', '', false\);$/i,
];

/** How many tokens of a statement are kept for the rules below. */
const KEPT_TOKENS = 8;
/** How much of a statement's text is kept (for the finding's text and the exact matches above). */
export const KEPT_TEXT = 200;

export interface Hazard {
  kind: PsqlFindingKind;
  why: string;
}

/**
 * One statement's rules, fed token by token. `word` and `literal` return a hazard as soon as
 * one is certain, so the statement is refused before psql sees its end.
 */
export class StatementRules {
  /** The first KEPT_TOKENS tokens: a word's text, undefined for anything else. */
  private readonly firstWords: (string | undefined)[] = [];
  private count = 0;
  /** The previous token was LANGUAGE in a function, procedure or DO. */
  private afterLanguage = false;
  /** COPY: 0 before FROM/TO, 1 right after it, 2 decided. */
  private copyStage = 0;
  copyIn = false;
  /** GRANT: TO came before any ON (a role is granted). */
  private grantSawOn = false;
  private sessionWord: string | null = null;
  private extensionNamed = false;

  reset(): void {
    this.extensionNamed = false;
    this.last = this.last2 = this.last3 = undefined;
    this.firstWords.length = 0;
    this.count = 0;
    this.afterLanguage = false;
    this.copyStage = 0;
    this.copyIn = false;
    this.grantSawOn = false;
    this.sessionWord = null;
  }

  private first(i: number): string | undefined {
    return this.firstWords[i];
  }

  /** A token (`word`: a word's text, undefined for anything else); the first KEPT_TOKENS are kept. */
  private keep(word: string | undefined, depth = 0): void {
    if (this.firstWords.length < KEPT_TOKENS) this.firstWords.push(word);
    this.count++;
    this.slide(word ?? "", depth);
  }

  /** CREATE [OR REPLACE] FUNCTION / PROCEDURE, or DO. */
  private runsCode(): boolean {
    const [a, b, c, d] = [this.first(0), this.first(1), this.first(2), this.first(3)];
    if (a === "do") return true;
    if (a !== "create") return false;
    const what = b === "or" && c === "replace" ? d : b;
    return what === "function" || what === "procedure";
  }

  /** An identifier or keyword (lowercased) at paren depth `depth`. */
  word(w: string, depth: number): Hazard | null {
    const index = this.count;
    const afterLanguage = this.afterLanguage;
    this.afterLanguage = false;
    this.keep(w, depth);
    if (afterLanguage && !TRUSTED_LANGUAGES.has(w)) return { kind: "untrusted_language", why: `code in language ${w}` };
    if (SESSION_WORDS.has(w)) this.sessionWord ??= w;
    if (w === "language" && depth === 0 && this.runsCode()) this.afterLanguage = true;
    if (index === 0) {
      if (w === "load") return { kind: "load", why: "LOAD loads a library into the server" };
      if (w === "do") return { kind: "dynamic_code", why: "DO runs code while loading" };
      return null;
    }
    const hazard = this.prefixRules(this.first(0), w, index, depth);
    if (hazard === null && SERVER_FUNCTIONS.has(w)) return { kind: "server_function", why: `calls ${w}` };
    return hazard;
  }

  private prefixRules(a: string | undefined, w: string, index: number, depth: number): Hazard | null {
    const b = this.first(1);
    switch (a) {
      case "copy":
        return this.copyWord(w, depth);
      case "alter":
        if (index === 1 && w === "system") return { kind: "alter_system", why: "ALTER SYSTEM changes the server's configuration" };
        if (index === 1 && (w === "role" || w === "user" || w === "group")) return { kind: "role_change", why: `ALTER ${w.toUpperCase()}` };
        return null;
      case "create":
      case "drop":
        if (index === 1 && (w === "role" || w === "user" || w === "group")) return { kind: "role_change", why: `${a.toUpperCase()} ${w.toUpperCase()}` };
        if (a === "create" && index === 1 && (w === "language" || w === "trusted" || w === "procedural")) {
          return { kind: "untrusted_language", why: "CREATE LANGUAGE" };
        }
        if (a === "create" && b === "extension" && !this.extensionNamed && index >= 2 && !["if", "not", "exists"].includes(w)) {
          this.extensionNamed = true;
          if (!ALLOWED_EXTENSIONS.has(w)) return { kind: "extension", why: `CREATE EXTENSION ${w}` };
        }
        return null;
      case "set":
        if ((index === 1 && (w === "role" || w === "session")) || (index === 2 && (b === "session" || b === "local") && (w === "role" || w === "authorization"))) {
          if (w !== "session") return { kind: "role_change", why: "SET ROLE / SESSION AUTHORIZATION" };
        }
        if ((index === 1 || (index === 2 && (b === "session" || b === "local"))) && w === "names") this.sessionWord ??= "client_encoding";
        return null;
      case "grant":
        if (depth === 0 && w === "on") this.grantSawOn = true;
        if (depth === 0 && w === "to" && !this.grantSawOn) return { kind: "role_change", why: "GRANT of a role" };
        return null;
      default:
        return null;
    }
  }

  private copyWord(w: string, depth: number): Hazard | null {
    if (depth !== 0) return null;
    if (this.copyStage === 0) {
      if (w === "from" || w === "to") this.copyStage = 1;
      return null;
    }
    if (this.copyStage !== 1) return null;
    this.copyStage = 2;
    if (w === "stdin") this.copyIn = true;
    else if (w === "program") return { kind: "copy_program", why: "COPY ... PROGRAM runs a command on the server" };
    else if (w !== "stdout") return { kind: "copy_file", why: `COPY ... ${w}` };
    return null;
  }

  /** A string literal (its first characters) or a quoted identifier. */
  literal(text: string, quoted: "string" | "identifier", depth: number): Hazard | null {
    const afterLanguage = this.afterLanguage;
    this.afterLanguage = false;
    this.keep(quoted === "string" ? undefined : `"${text}"`, depth);
    if (afterLanguage && quoted === "string" && !TRUSTED_LANGUAGES.has(text.toLowerCase())) {
      return { kind: "untrusted_language", why: `code in language ${text}` };
    }
    if (quoted === "identifier" && SERVER_FUNCTIONS.has(text)) return { kind: "server_function", why: `calls "${text}"` };
    if (this.first(0) === "copy" && depth === 0 && this.copyStage === 1) {
      this.copyStage = 2;
      return quoted === "string" ? { kind: "copy_file", why: "COPY ... a file of the server" } : null;
    }
    if (this.first(0) === "create" && this.first(1) === "extension" && !this.extensionNamed && quoted === "identifier") {
      this.extensionNamed = true;
      if (!ALLOWED_EXTENSIONS.has(text)) return { kind: "extension", why: `CREATE EXTENSION "${text}"` };
    }
    return null;
  }

  /** Punctuation or an operator character. */
  punct(): void {
    this.afterLanguage = false;
    this.keep(undefined);
  }

  /**
   * ALTER ... OWNER TO role: what pg_dump writes without --no-owner. The loader role may not
   * give objects away, and everything is the ERP user's after the load anyway, so the agent
   * drops these as pg_restore --no-owner does.
   */
  get ownerChange(): boolean {
    const c = this.last;
    return this.first(0) === "alter" && this.last3 === "owner" && this.last2 === "to" && c !== undefined && c !== "" && this.depthAtEnd === 0;
  }
  /** The last three tokens, the last one first (words, or "" for anything else), for ownerChange. */
  private last: string | undefined = undefined;
  private last2: string | undefined = undefined;
  private last3: string | undefined = undefined;
  private depthAtEnd = 0;

  private slide(t: string, depth: number): void {
    this.last3 = this.last2;
    this.last2 = this.last;
    this.last = t;
    this.depthAtEnd = depth;
  }

  /** Whether the words inside this statement's strings matter (not in an INSERT's values). */
  get readsBodies(): boolean {
    return this.first(0) !== "insert";
  }

  /** Whether the next string literal's text matters (a language's name, a COPY's file, an extension's name). */
  get readsLiteral(): boolean {
    return this.afterLanguage || (this.first(0) === "copy" && this.copyStage === 1) || (this.first(0) === "create" && this.first(1) === "extension" && !this.extensionNamed);
  }

  /** A word inside a string or dollar-quoted body: a body runs whenever it is called. */
  bodyWord(w: string): Hazard | null {
    if (this.first(0) === "insert") return null;
    if (SERVER_FUNCTIONS.has(w)) return { kind: "server_function", why: `a body that calls ${w}` };
    if (SESSION_WORDS.has(w)) this.sessionWord ??= w;
    return null;
  }

  /** Whether end() reads the statement's text (the lexer makes it only then). */
  get endReadsText(): boolean {
    return this.sessionWord !== null;
  }

  /** At the statement's end (`text`: its first KEPT_TEXT bytes, whitespace collapsed; `whole`: nothing was cut). */
  end(text: string, whole: boolean): Hazard | null {
    if (this.sessionWord !== null && !(whole && PG_DUMP_SESSION_STATEMENTS.some((r) => r.test(text)))) {
      return { kind: "session_setting", why: `${this.sessionWord} is set otherwise than pg_dump does` };
    }
    if (this.first(0) === "copy" && this.copyStage < 2) return { kind: "copy_file", why: "a COPY Berth cannot read" };
    return null;
  }
}
