// Parameters of every command type with every field set, as the protocol accepts them; each
// secret and each signed link carries SECRET_MARK, so a test can look for it wherever staff
// or a database reader could see it. examplesCoverSchemas() says which protocol field an
// example leaves out, so a new field fails the tests that use these until it is set here.
import { randomUUID } from "node:crypto";
import { COMMAND_PARAMS, COMMAND_TYPES, checkCommand, type CommandType, type SignedCommand } from "@berth/protocol";

export const SECRET_MARK = "SECRETMARKq7";

const id = () => randomUUID();
const later = () => new Date(Date.now() + 3_600_000).toISOString();
const sha = "ab".repeat(32);
const file = { name: "backup.zip", size: 1234, sha256: sha };
const proxy = { image: "caddy:2", acme_ca: "https://acme.example.com/directory", acme_ca_root: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", acme_email: "ops@example.com" };

function deploy(environmentId: string): Record<string, unknown> {
  return {
    deployment_id: id(),
    environment_id: environmentId,
    erp_version: "17.0",
    image: "berth-test/erp:17.0",
    git: { url: `https://deploy-bot:${SECRET_MARK}-git-token@git.example.com/acme/erp.git`, branch: "main", commit: "abcdef1" },
    resources: { cpu_cores: 1, ram_mb: 1024, disk_gb: 10, workers: 2 },
    domain: "shop.example.com",
    aliases: ["www.shop.example.com"],
    proxy,
    env: { DATABASE_PASSWORD: `${SECRET_MARK}-env-value`, TZ: `${SECRET_MARK}-env-tz` },
    db_image: "postgres:16",
    modules: { upgrade: ["sale", "stock"] },
    init: { without_demo: false, language: "fr_FR", country: "FR" },
    tests: { install_new_modules: true, require_passing: false },
    catch_mail: true,
    admin_passwd: `${SECRET_MARK}-admin-passwd`,
    admin_login: { password: `${SECRET_MARK}-admin-login`, version: "v7" },
    addon_repositories: [
      {
        id: id(),
        level: "environment",
        name: "acme-addons",
        url: `https://bot:${SECRET_MARK}-addon-userinfo@git.example.com/acme/addons.git`,
        branch: "17.0",
        commit: null,
        submodules: true,
        paths: ["addons"],
        ssh_private_key: `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET_MARK}-ssh-key\n-----END OPENSSH PRIVATE KEY-----`,
        token: `${SECRET_MARK}-addon-token`,
      },
    ],
    archive: { migration_id: id(), path: `/agent/v1/migrations/download/mgd_${SECRET_MARK}-archive-link`, expires_at: later(), file, neutralize: true },
  };
}

/** Every command type's parameters, every field set; `environmentId` where one is named. */
export function commandExamples(environmentId: string): Record<CommandType, Record<string, unknown>> {
  const lifecycle = () => ({ deployment_id: id(), environment_id: environmentId });
  return {
    deploy: deploy(environmentId),
    redeploy: deploy(environmentId),
    restart: lifecycle(),
    start: lifecycle(),
    stop: lifecycle(),
    backup: { ...lifecycle(), backup_id: id(), upload: { path: `/agent/v1/backups/${id()}/files`, token: `${SECRET_MARK}-upload-token`, expires_at: later() } },
    restore: {
      ...lifecycle(),
      backup_id: id(),
      source: { environment_id: id(), path: `/agent/v1/backups/download/${SECRET_MARK}-source-link`, expires_at: later(), files: [file] },
      archive: { path: `/agent/v1/migrations/download/mgd_${SECRET_MARK}-restore-link`, expires_at: later(), file, neutralize: false },
      copy: { base_url: "https://shop.example.com", catch_mail: true },
      live_source: { environment_id: id() },
    },
    destroy: { ...lifecycle(), delete_data: true },
    "logs.tail": { environment_id: environmentId, lines: 20 },
    diagnostics: {},
    "keys.update": { signing_keys: [{ key_id: "0123456789abcdef", public_key: Buffer.alloc(32, 1).toString("base64") }] },
    "agent.update": { version: "1.2.3", url: "https://cp.example.com/agent/v1/download/x64", sha256: sha, size: 4096 },
    route: { environment_id: environmentId, domain: "shop.example.com", aliases: ["www.shop.example.com"], proxy },
  };
}

type Schema = { properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[] };

/** The property paths of a schema (a.b, list[].c), through unions and arrays. */
function schemaPaths(s: Schema, prefix = ""): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(s.properties ?? {})) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p, ...schemaPaths(v, p));
  }
  if (s.items) out.push(...schemaPaths(s.items, `${prefix}[]`));
  for (const branch of s.anyOf ?? []) out.push(...schemaPaths(branch, prefix));
  return out;
}

function valuePaths(v: unknown, prefix = "", out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const e of v) valuePaths(e, `${prefix}[]`, out);
  else if (v !== null && typeof v === "object") {
    for (const [k, e] of Object.entries(v)) {
      const p = prefix ? `${prefix}.${k}` : k;
      out.add(p);
      valuePaths(e, p, out);
    }
  }
  return out;
}

/** Per command type, the schema's fields an example leaves unset, and the protocol's verdict on it. */
export function examplesCoverSchemas(examples: Record<CommandType, Record<string, unknown>>): { type: CommandType; missing: string[]; valid: string | true }[] {
  return COMMAND_TYPES.map((type) => {
    const present = valuePaths(examples[type]);
    const missing = [...new Set(schemaPaths(COMMAND_PARAMS[type] as Schema))].filter((p) => !present.has(p));
    const check = checkCommand({ type, params: examples[type] } as unknown as SignedCommand);
    return { type, missing, valid: check.ok ? true : check.message };
  });
}
