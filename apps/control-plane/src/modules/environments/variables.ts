// Rules for an environment's variables: names the container may take, values sealed with
// the master key as soon as they arrive and never shown again (like GitHub's Actions
// secrets), a size and a count limit. A deploy snapshots the sealed map into its
// configuration (extra_data.config.variables), so retry and rollback send the variables
// of the deployment they repeat; the dispatcher opens them into the signed command.
import { ENV_NAME_PATTERN } from "@berth/protocol";
import { DomainError, notFound } from "../../lib/errors.ts";
import { open, seal } from "../../lib/master-key.ts";
import type { Clock } from "../../lib/clock.ts";
import type { Scope } from "../../lib/scope.ts";
import type { EnvironmentsRepo } from "./environments.repo.ts";

/** The protocol's ENV_NAME_PATTERN (packages/protocol commands.ts), with a length limit. */
export const VARIABLE_NAME_PATTERN = ENV_NAME_PATTERN;
export const MAX_VARIABLE_NAME_LENGTH = 255;
export const MAX_VARIABLE_VALUE_BYTES = 32 * 1024;
export const MAX_VARIABLES = 100;
/** What every listing shows instead of a value. */
export const MASKED_VALUE = "••••";

/**
 * Names the ERP image or Berth set themselves: the official Odoo image reads HOST, PORT,
 * USER and PASSWORD for its database connection (and ODOO_RC for its configuration file);
 * libpq reads PG*; BERTH_ is Berth's own prefix. Compared without regard to case.
 */
const RESERVED = new Set(["HOST", "PORT", "USER", "PASSWORD", "ODOO_RC", "PATH", "HOME", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGPASSFILE", "PGSERVICEFILE"]);
const RESERVED_PREFIXES = ["BERTH_"];
export const RESERVED_VARIABLE_NAMES = [...RESERVED, ...RESERVED_PREFIXES.map((p) => `${p}*`)];

/** One stored variable: its value sealed (AES-256-GCM, iv.tag.ciphertext) and when it was last set. */
export interface StoredVariable {
  value_enc: string;
  updated_at: string;
}
export type StoredVariables = Record<string, StoredVariable>;

const NAME_RE = new RegExp(VARIABLE_NAME_PATTERN);

export function checkVariableName(name: string): void {
  if (name.length === 0 || name.length > MAX_VARIABLE_NAME_LENGTH || !NAME_RE.test(name)) {
    throw new DomainError("variable_name_invalid", `A variable name is a letter or _ followed by letters, digits or _ (at most ${MAX_VARIABLE_NAME_LENGTH} characters)`);
  }
  const upper = name.toUpperCase();
  if (RESERVED.has(upper) || RESERVED_PREFIXES.some((p) => upper.startsWith(p))) {
    throw new DomainError("variable_reserved", `${name} is set by Berth or the ERP image and cannot be overridden (reserved: ${RESERVED_VARIABLE_NAMES.join(", ")})`);
  }
}

export function checkVariableValue(name: string, value: string): void {
  if (Buffer.byteLength(value, "utf8") > MAX_VARIABLE_VALUE_BYTES) {
    throw new DomainError("variable_value_too_large", `The value of ${name} is larger than ${MAX_VARIABLE_VALUE_BYTES / 1024} KiB`);
  }
}

const limitReached = () => new DomainError("variable_limit_reached", `An environment holds at most ${MAX_VARIABLES} variables; delete one first`);

/** The stored map as the column holds it (anything else reads as no variables). */
export function storedVariables(column: unknown): StoredVariables {
  return column && typeof column === "object" && !Array.isArray(column) ? (column as StoredVariables) : {};
}

/** The configuration snapshot of the variables: name to sealed value (extra_data.config.variables). */
export function sealedSnapshot(column: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries(storedVariables(column)).map(([name, v]) => [name, v.value_enc]));
}

/** Opens a snapshot for the deploy command; a value sealed with another master key is left out. */
export function openSnapshot(masterKey: Buffer, snapshot: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, sealed] of Object.entries(snapshot)) {
    try {
      env[name] = open(masterKey, sealed);
    } catch {
      // sealed with another master key: the variable cannot be delivered
    }
  }
  return env;
}

/** extra_data as the APIs show it: the snapshot's sealed values replaced by the sorted names. */
export function extraDataView(extra: unknown): Record<string, unknown> {
  const out = { ...((extra ?? {}) as Record<string, unknown>) };
  const config = out.config as Record<string, unknown> | undefined;
  if (config && typeof config === "object" && config.variables && typeof config.variables === "object") {
    out.config = { ...config, variables: Object.keys(config.variables).sort() };
  }
  return out;
}

export function variableView(name: string, v: StoredVariable) {
  return { name, value_masked: MASKED_VALUE, updated_at: v.updated_at };
}

function listView(column: unknown) {
  const vars = storedVariables(column);
  const variables = Object.keys(vars)
    .sort()
    .map((name) => variableView(name, vars[name]!));
  return { variables, total: variables.length };
}

export function createVariablesService(deps: {
  environments: Pick<EnvironmentsRepo, "get" | "setVariable" | "deleteVariable" | "replaceVariables">;
  masterKey: Buffer;
  clock: Clock;
}) {
  async function environment(scope: Scope, id: string) {
    const row = await deps.environments.get(scope, id);
    if (!row) throw notFound("Environment");
    return row;
  }
  const stored = (value: string): StoredVariable => ({ value_enc: seal(deps.masterKey, value), updated_at: deps.clock.now().toISOString() });

  return {
    async list(scope: Scope, environmentId: string) {
      return listView((await environment(scope, environmentId)).variables);
    },

    /** Creates or updates one variable; created tells which. */
    async set(scope: Scope, environmentId: string, name: string, value: string) {
      checkVariableName(name);
      checkVariableValue(name, value);
      const env = await environment(scope, environmentId);
      const entry = stored(value);
      const out = await deps.environments.setVariable(env.id, name, entry, MAX_VARIABLES);
      if (!out) throw limitReached();
      return { created: !out.existed, variable: variableView(name, entry) };
    },

    /** Makes the variables exactly these (the ones not named are deleted). */
    async replace(scope: Scope, environmentId: string, values: Record<string, string>) {
      const names = Object.keys(values);
      if (names.length > MAX_VARIABLES) throw limitReached();
      for (const name of names) {
        checkVariableName(name);
        checkVariableValue(name, values[name]!);
      }
      const env = await environment(scope, environmentId);
      const map: StoredVariables = Object.fromEntries(names.map((name) => [name, stored(values[name]!)]));
      await deps.environments.replaceVariables(env.id, map);
      return listView(map);
    },

    async remove(scope: Scope, environmentId: string, name: string) {
      const env = await environment(scope, environmentId);
      if (!(await deps.environments.deleteVariable(env.id, name))) throw notFound("Variable");
    },
  };
}
export type VariablesService = ReturnType<typeof createVariablesService>;
