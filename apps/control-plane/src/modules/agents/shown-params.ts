// What of a command's parameters may be shown to staff (the support console) and kept in
// clear in the outbox: an allow-list per command type. Everything the list does not show is
// absent from the view: secrets (passwords, tokens, keys, environment variable values) and
// the signed links that work as secrets (a backup's or a migration archive's download path).
// The whole command, secrets included, is stored only sealed (agent-commands.ts).
//
// Each command type has one rule per parameter field, optional ones included, so a new
// command type or a new field in packages/protocol does not compile until someone decides
// here whether staff may see it.
import type {
  AddonRepository,
  AgentUpdateParams,
  BackupParams,
  CommandParams,
  CommandType,
  DeployParams,
  DestroyParams,
  GitSource,
  KeysUpdateParams,
  LifecycleParams,
  LogsTailParams,
  RestoreParams,
  RouteParams,
} from "@berth/protocol";
import { withoutCredentials } from "../../lib/git-credentials.ts";

/** Shown as signed. */
const SHOWN = "shown";
/** Never shown, never kept in clear. */
const SECRET = "secret";
type Rule<V> = typeof SHOWN | typeof SECRET | ((value: V) => unknown);
/** A rule for every field of P, optional ones included. */
type Rules<P> = { [K in keyof P]-?: Rule<Exclude<P[K], undefined>> };
type View = Record<string, unknown>;

/** Applies one rule per field; fields without a rule (none the protocol knows) and secret ones are left out. */
function fields<P>(rules: Rules<P>): (value: P) => View {
  return (value) => {
    const out: View = {};
    if (value === null || typeof value !== "object") return out;
    for (const [key, rule] of Object.entries(rules) as [string, Rule<unknown>][]) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined || rule === SECRET) continue;
      out[key] = rule === SHOWN ? v : rule(v);
    }
    return out;
  };
}

const each =
  <V>(rule: (value: V) => unknown) =>
  (list: V[]): unknown[] =>
    Array.isArray(list) ? list.map(rule) : [];
const url = (value: string) => (typeof value === "string" ? withoutCredentials(value) : null);

const git = fields<GitSource>({ url, branch: SHOWN, commit: SHOWN });
const addonRepository = fields<AddonRepository>({
  id: SHOWN,
  level: SHOWN,
  name: SHOWN,
  url,
  branch: SHOWN,
  commit: SHOWN,
  submodules: SHOWN,
  paths: SHOWN,
  ssh_private_key: SECRET,
  token: SECRET,
});
// The archive's path holds its signed download link.
const archive = fields<Exclude<RestoreParams["archive"], undefined>>({ path: SECRET, expires_at: SHOWN, file: SHOWN, neutralize: SHOWN });

const deploy = fields<DeployParams>({
  deployment_id: SHOWN,
  environment_id: SHOWN,
  erp_version: SHOWN,
  image: SHOWN,
  git: (g) => (g === null ? null : git(g)),
  resources: SHOWN,
  domain: SHOWN,
  aliases: SHOWN,
  proxy: SHOWN,
  // The variables' names: their values are the customer's secrets.
  env: (env) => Object.fromEntries(Object.keys(env ?? {}).map((name) => [name, "[redacted]"])),
  db_image: SHOWN,
  modules: SHOWN,
  init: SHOWN,
  admin_passwd: SECRET,
  admin_login: fields<Exclude<DeployParams["admin_login"], undefined>>({ password: SECRET, version: SHOWN }),
  addon_repositories: each(addonRepository),
  tests: SHOWN,
  archive: fields<Exclude<DeployParams["archive"], undefined>>({ migration_id: SHOWN, path: SECRET, expires_at: SHOWN, file: SHOWN, neutralize: SHOWN }),
  catch_mail: SHOWN,
});
const lifecycle = fields<LifecycleParams>({ deployment_id: SHOWN, environment_id: SHOWN });

const RULES: { [T in CommandType]: (params: CommandParams<T>) => View } = {
  deploy,
  redeploy: deploy,
  restart: lifecycle,
  start: lifecycle,
  stop: lifecycle,
  backup: fields<BackupParams>({
    deployment_id: SHOWN,
    environment_id: SHOWN,
    backup_id: SHOWN,
    upload: fields<Exclude<BackupParams["upload"], undefined>>({ path: SHOWN, token: SECRET, expires_at: SHOWN }),
  }),
  restore: fields<RestoreParams>({
    deployment_id: SHOWN,
    environment_id: SHOWN,
    backup_id: SHOWN,
    // The source's path holds its signed download link.
    source: fields<Exclude<RestoreParams["source"], undefined>>({ environment_id: SHOWN, path: SECRET, expires_at: SHOWN, files: SHOWN }),
    archive,
    live_source: SHOWN,
    copy: SHOWN,
  }),
  destroy: fields<DestroyParams>({ deployment_id: SHOWN, environment_id: SHOWN, delete_data: SHOWN }),
  "logs.tail": fields<LogsTailParams>({ environment_id: SHOWN, lines: SHOWN }),
  diagnostics: () => ({}),
  "keys.update": fields<KeysUpdateParams>({ signing_keys: SHOWN }),
  "agent.update": fields<AgentUpdateParams>({ version: SHOWN, url, sha256: SHOWN, size: SHOWN }),
  route: fields<RouteParams>({ environment_id: SHOWN, domain: SHOWN, aliases: SHOWN, proxy: SHOWN }),
};

/** What staff may see of a command's parameters; {} for a type this build does not know. */
export function shownParams(type: string, params: Record<string, unknown>): View {
  const rule = (RULES as unknown as Record<string, ((p: Record<string, unknown>) => View) | undefined>)[type];
  return rule ? rule(params) : {};
}
