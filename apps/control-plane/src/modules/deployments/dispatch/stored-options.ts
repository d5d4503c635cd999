// What a deployment row keeps for its command (extra_data), read back as the protocol's
// types: the deploy options (modules, init) and the configuration a retry or rollback
// repeats. Each is checked against its schema, so what is sent is what the agent accepts;
// a stored value that is not fails the command (dispatch-error.ts) instead of being cast.
import { Type, type Static } from "typebox";
import { Compile } from "typebox/compile";
import { DatabaseInit, ModuleUpgrade, Resources } from "@berth/protocol";
import { DispatchError } from "./dispatch-error.ts";

/** extra_data.config: the resources and the variables (name to sealed value) an operation ran with. */
const StoredConfig = Type.Object({ ...Resources.properties, variables: Type.Optional(Type.Record(Type.String(), Type.String())) });
export type StoredConfig = Static<typeof StoredConfig>;

const checkModules = Compile(ModuleUpgrade);
const checkInit = Compile(DatabaseInit);
const checkConfig = Compile(StoredConfig);
const objectOf = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null && !Array.isArray(value) ? { ...value } : {});

/** extra[key] when it matches its schema; absent when unset; a DispatchError when it does not match. */
function read<T>(extra: Record<string, unknown>, key: string, check: { Check(value: unknown): value is T }): T | undefined {
  const value = extra[key];
  if (value === undefined || value === null) return undefined;
  if (!check.Check(value)) throw new DispatchError("stored_option_invalid", `the deployment's stored ${key} is not valid for the agent`);
  return value;
}

/** The deployment's extra_data as the dispatcher reads it. */
export function storedOptions(extraData: unknown): {
  modules: ModuleUpgrade | undefined;
  init: DatabaseInit | undefined;
  config: StoredConfig | undefined;
  extra: Record<string, unknown>;
} {
  const extra = objectOf(extraData);
  return { modules: read(extra, "modules", checkModules), init: read(extra, "init", checkInit), config: read(extra, "config", checkConfig), extra };
}
