// Questions to the person at the terminal (on stderr, so stdout stays the command's result) and
// secrets read from stdin for scripts. A prompt without a terminal is refused, never hung on.
import { createInterface } from "node:readline/promises";
import { CliError, EXIT } from "./errors.ts";

/** A person can answer: stdin and stderr are a terminal. */
export function interactive(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/** All of stdin, without the final line break (for --password-stdin and --api-key-stdin). */
export async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += typeof chunk === "string" ? chunk : (chunk as Buffer).toString("utf8");
  return text.replace(/\r?\n$/, "");
}

export async function ask(question: string, opts: { hidden?: boolean } = {}): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  if (opts.hidden) {
    // Echo the question only, not what is typed.
    const r = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WritableStream };
    r._writeToOutput = (s: string) => {
      if (s.startsWith(question) || s === "\r\n" || s === "\n") r.output.write(s);
    };
  }
  try {
    return await rl.question(question);
  } finally {
    if (opts.hidden) process.stderr.write("\n");
    rl.close();
  }
}

/**
 * Goes on when `yes` (--yes) is given or the person types y; without a terminal, refuses (exit 2),
 * so a script never deletes or restores without saying so.
 */
export async function confirm(question: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!interactive()) throw new CliError(`${question} Refused without a terminal to ask: pass --yes.`, EXIT.usage, "confirm_required");
  const answer = await ask(`${question} [y/N] `);
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError("Cancelled.", EXIT.failed, "cancelled");
}
