// Settings that stop the agent before it starts: one line per problem, exit code 2.
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: string | readonly string[]) {
    const list = typeof problems === "string" ? [problems] : problems;
    super(list.join("\n"));
    this.name = "ConfigError";
    this.problems = list;
  }
}

export type Env = Readonly<Record<string, string | undefined>>;
