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
  if (opts.hidden) return askHidden(question);
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await rl.question(question);
  } finally {
    rl.close();
  }
}

/**
 * A secret typed on the terminal in raw mode: nothing of it is echoed, not even its length.
 * Raw mode goes on before the question is shown, so what is typed as soon as it appears is
 * never echoed by the terminal (in the other order a busy machine showed the password).
 */
function askHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  stdin.setRawMode(true);
  process.stderr.write(question);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve) => {
    let typed = "";
    const done = (then: () => void) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      then();
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") return done(() => resolve(typed));
        // Ctrl-C: as a terminal would, end with the conventional code of SIGINT.
        if (ch === "\u0003") return done(() => process.exit(130));
        if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
        else if (ch >= " ") typed += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/**
 * Goes on when `yes` (--yes) is given or the person types y; without a terminal, refuses (exit 2),
 * so a script never deletes or restores without saying so.
 */
export async function confirm(question: string, yes: boolean | undefined, option = "--yes"): Promise<void> {
  if (yes) return;
  if (!interactive()) throw new CliError(`${question} Refused without a terminal to ask: pass ${option}.`, EXIT.usage, "confirm_required");
  const answer = await ask(`${question} [y/N] `);
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError("Cancelled.", EXIT.failed, "cancelled");
}
