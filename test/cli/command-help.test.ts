// Every command's --help, as buildProgram makes the tree: exit 0, its usage, and examples.
import { expect, it } from "vitest";
import { buildProgram } from "../../apps/control-plane/src/cli/main.ts";
import { cliRunner } from "../support/cli.ts";

/** commander as the CLI has it (the test workspace may resolve another copy). */
type Command = ReturnType<typeof buildProgram>;

const cli = cliRunner();

function paths(cmd: Command, words: string[] = []): string[][] {
  return cmd.commands.flatMap((c) => [[...words, c.name()], ...paths(c, [...words, c.name()])]);
}

it("every command's --help shows its usage and examples", { timeout: 120_000 }, async () => {
  const all = paths(buildProgram({}));
  expect(all.length).toBeGreaterThan(20);
  const results = await Promise.all(all.map(async (words) => ({ words, r: await cli.run([...words, "--help"]) })));
  for (const { words, r } of results) {
    expect(r.code, words.join(" ")).toBe(0);
    expect(r.stdout, words.join(" ")).toContain(`Usage: berth ${words.join(" ")}`);
    expect(r.stdout, words.join(" ")).toMatch(/\nExamples?:\n {2}\$ berth /);
  }
});
