// `berth completion`: the scripts cover the whole command tree as buildProgram makes it (so a
// new command is completed without anyone touching completion.ts), and the bash one, run in a
// real bash, offers each command's subcommands and options after its words.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { buildProgram } from "../../apps/control-plane/src/cli/main.ts";
import { cliRunner } from "../support/cli.ts";

/** commander as the CLI has it (the test workspace may resolve another copy). */
type Command = ReturnType<typeof buildProgram>;

const cli = cliRunner();

/** Every command's typed path ("projects list") with what must be offered after it. */
function tree(cmd: Command, words: string[] = []): { words: string[]; offers: string[] }[] {
  const offers = [...cmd.commands.map((c) => c.name()), ...cmd.options.map((o) => o.long!).filter((l) => l !== "--version"), "--help"];
  return [{ words, offers }, ...cmd.commands.flatMap((c) => tree(c, [...words, c.name()]))];
}

const nodes = tree(buildProgram({}));

it("the tree has the commands of every command file", () => {
  const top = nodes.filter((n) => n.words.length === 1).map((n) => n.words[0]);
  expect(top).toEqual(expect.arrayContaining(["login", "logout", "whoami", "servers", "projects", "environments", "backups", "completion"]));
});

it("bash: after each command's words, its subcommands and options are offered", async () => {
  const r = await cli.run(["completion", "bash"]);
  expect(r.code).toBe(0);
  const dir = mkdtempSync(path.join(tmpdir(), "berth-completion-"));
  writeFileSync(path.join(dir, "berth.bash"), r.stdout);
  // One bash run asks for the completions at every node; `--json` first, as a user may type it.
  const driver = [
    `source ${JSON.stringify(path.join(dir, "berth.bash"))}`,
    ...nodes.map((n) => `COMP_WORDS=(berth --json ${n.words.join(" ")} ""); COMP_CWORD=${n.words.length + 2}; COMPREPLY=(); _berth; echo "${n.words.join(" ")}|\${COMPREPLY[*]}"`),
  ].join("\n");
  const lines = execFileSync("bash", ["-c", driver], { encoding: "utf8" }).trimEnd().split("\n");
  expect(lines).toHaveLength(nodes.length);
  for (const [i, n] of nodes.entries()) {
    const [at, offered = ""] = lines[i]!.split("|");
    expect(at).toBe(n.words.join(" "));
    expect(offered.split(" "), `after "berth ${at}"`).toEqual(expect.arrayContaining(n.offers));
  }
  // A prefix narrows the offer.
  const narrowed = execFileSync("bash", ["-c", `source ${JSON.stringify(path.join(dir, "berth.bash"))}; COMP_WORDS=(berth projects cr); COMP_CWORD=2; _berth; echo "\${COMPREPLY[*]}"`], { encoding: "utf8" });
  expect(narrowed.trim()).toBe("create");
});

const installed = (shell: string) => spawnSync(shell, ["-c", "exit 0"]).status === 0;

// In the shells themselves where they are installed (bash always is).
it.skipIf(!installed("zsh"))("zsh: after each command's words, its subcommands and options are offered", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-completion-"));
  writeFileSync(path.join(dir, "_berth"), (await cli.run(["completion", "zsh"])).stdout);
  // _describe stubbed to print its candidates: the script's own logic picks them.
  const driver = [
    `compdef() {}; _describe() { print -r -- "\${(j: :)\${(@)\${(@P)4}%%:*}}"; }`,
    `source ${JSON.stringify(path.join(dir, "_berth"))}`,
    ...nodes.map((n) => `words=(berth --json ${n.words.join(" ")} ""); CURRENT=${n.words.length + 3}; _berth`),
  ].join("\n");
  const lines = execFileSync("zsh", ["-f", "-c", driver], { encoding: "utf8" }).trimEnd().split("\n");
  for (const [i, n] of nodes.entries()) expect(lines[i]!.split(" "), `after "berth ${n.words.join(" ")}"`).toEqual(expect.arrayContaining(n.offers));
});

it.skipIf(!installed("fish"))("fish: after each command's words, its subcommands and options are offered", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-completion-"));
  writeFileSync(path.join(dir, "berth.fish"), (await cli.run(["completion", "fish"])).stdout);
  const driver = [
    `source ${JSON.stringify(path.join(dir, "berth.fish"))}`,
    ...nodes.map((n) => `echo (complete -C "berth --json ${n.words.join(" ")} " | string split -f1 \\t) (complete -C "berth --json ${n.words.join(" ")} -" | string split -f1 \\t)`),
  ].join("\n");
  const lines = execFileSync("fish", ["--no-config", "-c", driver], { encoding: "utf8" }).trimEnd().split("\n");
  for (const [i, n] of nodes.entries()) expect(lines[i]!.split(" "), `after "berth ${n.words.join(" ")}"`).toEqual(expect.arrayContaining(n.offers));
});

it.each(["zsh", "fish"])("%s: the script names every command path and option", async (shell) => {
  const r = await cli.run(["completion", shell]);
  expect(r.code).toBe(0);
  for (const n of nodes.slice(1)) expect(r.stdout).toContain(`'berth ${n.words.join(" ")}'`);
  for (const o of new Set(nodes.flatMap((n) => n.offers).filter((w) => w.startsWith("--")))) {
    expect(r.stdout).toContain(shell === "fish" ? `-l ${o.slice(2)}` : `'${o}:`);
  }
});

it("--json gives the script in a JSON document", async () => {
  const r = await cli.run(["completion", "fish", "--json"]);
  expect(JSON.parse(r.stdout)).toEqual({ shell: "fish", script: (await cli.run(["completion", "fish"])).stdout.trimEnd() });
});

it("an unknown shell is a usage error", async () => {
  const r = await cli.run(["completion", "tcsh"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("bash, zsh or fish");
});
