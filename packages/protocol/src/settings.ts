// Settings from the environment, declared once per program: the control plane's in
// apps/control-plane/src/config/settings.ts, the agent's in apps/agent/src/config/settings.ts.
// A declaration holds everything about one setting (its BERTH_* name, the names it had before,
// its default, a one-line description, whether it is a secret, and the one function that
// parses it); this file reads declarations against an environment and reports every problem
// at once. The settings reference (apps/control-plane/docs/settings.md) and .env.example are
// generated from the same declarations (npm run docs:settings). No schema library: the agent
// is bundled into one executable and most rules (CIDR lists, host names, resolvers) are code
// anyway.

export type SettingsEnv = Readonly<Record<string, string | undefined>>;

export interface SettingInfo {
  /** The canonical name: BERTH_* (DATABASE_URL keeps the name every PostgreSQL tool knows). */
  readonly name: string;
  /** One line for the settings reference's table. */
  readonly description: string;
  /** The value used when the setting is unset, as one would write it in the environment. */
  readonly default?: string;
  /** How the docs state a default that is not a literal value (e.g. `<BERTH_DATA_DIR>/backups`). */
  readonly defaultText?: string;
  /** Names it was read under before; still read, with a warning naming the canonical one. */
  readonly oldNames?: readonly string[];
  /** Never printed, and left blank in .env.example. */
  readonly secret?: boolean;
  /** Taken as written (a password); any other value is trimmed. */
  readonly keepSpaces?: boolean;
}

export interface Setting<T> extends SettingInfo {
  /** The typed value of a trimmed, non-empty text (undefined: unset, so the default or undefined). Throws an Error naming the setting. */
  readonly read: (raw: string | undefined, env: SettingsEnv) => T;
}

interface Declaration<T> extends SettingInfo {
  /** Parses a trimmed, non-empty text; throws an Error whose message names the setting. */
  readonly parse: (raw: string, env: SettingsEnv) => T;
}

/** A setting with a default is always set; one without is undefined when unset. */
export function setting<T>(decl: Declaration<T> & { default: string }): Setting<T>;
export function setting<T>(decl: Declaration<T>): Setting<T | undefined>;
export function setting<T>(decl: Declaration<T>): Setting<T | undefined> {
  const { parse, ...info } = decl;
  return {
    ...info,
    read: (raw, env) => {
      const text = raw ?? info.default;
      return text === undefined ? undefined : parse(text, env);
    },
  };
}

export type Settings = Readonly<Record<string, Setting<unknown>>>;
export type SettingValues<D extends Settings> = { -readonly [K in keyof D]: D[K] extends Setting<infer T> ? T : never };

/** One line per problem, each naming its setting; the message is those lines. */
export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "SettingsError";
  }
}

export interface SettingsReading<V> {
  values: V;
  /** Every setting that could not be read, one line each. */
  problems: string[];
  /** Old names in use: "<old> is deprecated: set <new> instead". */
  warnings: string[];
  /** Keys whose value is missing because of a problem. */
  failed: Set<keyof V>;
}

/** The raw text of a setting: its name, else the first old name set; empty counts as unset. */
export function rawSetting(info: SettingInfo, env: SettingsEnv): { text: string | undefined; from: string } {
  for (const name of [info.name, ...(info.oldNames ?? [])]) {
    const value = env[name];
    if (value !== undefined && value.trim() !== "") return { text: info.keepSpaces ? value : value.trim(), from: name };
  }
  return { text: undefined, from: info.name };
}

/** Reads the given settings (all by default), collecting every problem instead of stopping at the first. */
export function readSettings<D extends Settings, K extends keyof D & string = keyof D & string>(
  decls: D,
  env: SettingsEnv,
  keys: readonly K[] = Object.keys(decls) as K[],
): SettingsReading<Pick<SettingValues<D>, K>> {
  const values = {} as Pick<SettingValues<D>, K>;
  const problems: string[] = [];
  const warnings: string[] = [];
  const failed = new Set<K>();
  for (const key of keys) {
    const decl = decls[key]!;
    const { text, from } = rawSetting(decl, env);
    if (from !== decl.name) warnings.push(`${from} is deprecated: set ${decl.name} instead`);
    try {
      values[key] = decl.read(text, env) as SettingValues<D>[K];
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
      failed.add(key);
    }
  }
  return { values, problems, warnings, failed };
}

/** readSettings, throwing a SettingsError with every problem; warnings go to `warn`. */
export function settingsOrThrow<D extends Settings, K extends keyof D & string = keyof D & string>(
  decls: D,
  env: SettingsEnv,
  keys?: readonly K[],
  warn: (warning: string) => void = () => {},
): Pick<SettingValues<D>, K> {
  const reading = readSettings(decls, env, keys);
  for (const warning of reading.warnings) warn(warning);
  if (reading.problems.length > 0) throw new SettingsError(reading.problems);
  return reading.values;
}
