// What the CLI prints: tables and records for people, one JSON document for scripts (--json),
// colours only on a terminal (never when piped, or with NO_COLOR or --no-color). Results go
// to stdout; progress and errors to stderr, so `berth … --json | jq` always gets clean JSON.
import { styleText } from "node:util";

export interface Column<T> {
  header: string;
  get: (row: T) => unknown;
}

type Style = Parameters<typeof styleText>[0];

export class Output {
  constructor(
    readonly json: boolean,
    readonly colour: boolean,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    private readonly stderr: NodeJS.WritableStream = process.stderr,
  ) {}

  static detect(opts: { json?: boolean; color?: boolean }, env: NodeJS.ProcessEnv = process.env): Output {
    const tty = Boolean((process.stdout as { isTTY?: boolean }).isTTY);
    const colour = opts.color !== false && !env.NO_COLOR && (tty || Boolean(env.FORCE_COLOR && env.FORCE_COLOR !== "0"));
    return new Output(Boolean(opts.json), colour);
  }

  paint(style: Style, text: string): string {
    return this.colour ? styleText(style, text, { validateStream: false }) : text;
  }

  line(text = ""): void {
    this.stdout.write(`${text}\n`);
  }

  /** Progress and notes for people: stderr, silent with --json. */
  note(text: string): void {
    if (!this.json) this.stderr.write(`${text}\n`);
  }

  error(text: string): void {
    this.stderr.write(`${this.paint("red", "error:")} ${text}\n`);
  }

  /** The result of a command: as JSON with --json, else as `human` prints it. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.line(JSON.stringify(value, null, 2));
    else human();
  }

  table<T>(rows: T[], columns: Column<T>[], empty = "Nothing here yet."): void {
    if (rows.length === 0) {
      this.line(empty);
      return;
    }
    const cells = rows.map((r) => columns.map((c) => text(c.get(r))));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
    const pad = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join("  ");
    this.line(this.paint("bold", pad(columns.map((c) => c.header.toUpperCase()))));
    for (const row of cells) this.line(pad(row));
  }

  record(fields: [label: string, value: unknown][]): void {
    const width = Math.max(...fields.map(([l]) => l.length));
    for (const [label, value] of fields) this.line(`${this.paint("dim", `${label}:`.padEnd(width + 1))} ${text(value)}`);
  }
}

function text(v: unknown): string {
  if (v === null || v === undefined || v === "") return "-";
  if (Array.isArray(v)) return v.map(text).join(", ");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}
