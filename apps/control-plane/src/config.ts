// The control plane's settings as its parts use them. Every setting is declared and parsed in
// config/settings.ts; here they are grouped (with the rules that join several settings), and
// loadStartSettings reads them all at start so that every problem is reported at once.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readSettings, settingsOrThrow, SettingsError, type ProxySettings, type SettingValues, type SettingsEnv } from "@berth/protocol";
import type { ObjectStoreSettings } from "./lib/object-store/index.ts";
import { CONTROL_PLANE_SETTINGS, type ControlPlaneSettingKey } from "./config/settings.ts";
import type { RetentionSettings } from "./modules/retention/retention.ts";

export { LOG_LEVELS, REGISTRATION_MODES, type LogLevel, type RegistrationMode } from "./config/settings.ts";

type Values = SettingValues<typeof CONTROL_PLANE_SETTINGS>;

// A former name (PORT, HOST, LOG_LEVEL) still works, and is reported once on stderr.
const warned = new Set<string>();
function warnOnce(warning: string): void {
  if (warned.has(warning)) return;
  warned.add(warning);
  process.emitWarning(warning, { code: "BERTH_SETTING_RENAMED" });
}

/** Settings that belong together, and how their values make what the code uses. */
interface Group<K extends ControlPlaneSettingKey, T> {
  keys: readonly K[];
  build: (values: Pick<Values, K>, env: SettingsEnv) => T;
}
function group<K extends ControlPlaneSettingKey, T>(keys: readonly K[], build: (values: Pick<Values, K>, env: SettingsEnv) => T): Group<K, T> {
  return { keys, build };
}
function fromEnv<K extends ControlPlaneSettingKey, T>(g: Group<K, T>, env: SettingsEnv): T {
  return g.build(settingsOrThrow(CONTROL_PLANE_SETTINGS, env, g.keys, warnOnce), env);
}

const DEFAULT_AGENT_DIST_DIR = fileURLToPath(new URL("../../../installers/dist", import.meta.url));
const readText = (file: string): string => readFileSync(file, "utf8");

const GROUPS = {
  config: group(["port", "host", "databaseUrl", "dataDir", "embeddedPgPort", "logLevel", "masterKey"], (v) => v),
  agentDistDir: group(["agentDistDir"], (v) => v.agentDistDir ?? DEFAULT_AGENT_DIST_DIR),
  publicUrl: group(["publicUrl"], (v) => v.publicUrl),
  outboundAllow: group(["outboundAllow"], (v) => v.outboundAllow ?? []),
  trustProxy: group(["trustProxy"], (v) => v.trustProxy),
  registration: group(["registration"], (v) => v.registration),
  mail: group(["smtpUrl", "mailFrom"], (v): { smtpUrl?: string; from: string } => (v.smtpUrl === undefined ? { from: v.mailFrom } : { smtpUrl: v.smtpUrl, from: v.mailFrom })),
  agentLimits: group(["agentLogLinesPerMinute", "agentLogBytesPerMinute", "agentHandshakesPerAddress", "agentHellosPerAddressPerMinute"], (v) => {
    const out: Partial<Record<"logLinesPerMinute" | "logBytesPerMinute" | "handshakesPerAddress" | "hellosPerAddressPerMinute", number>> = {};
    if (v.agentLogLinesPerMinute !== undefined) out.logLinesPerMinute = v.agentLogLinesPerMinute;
    if (v.agentLogBytesPerMinute !== undefined) out.logBytesPerMinute = v.agentLogBytesPerMinute;
    if (v.agentHandshakesPerAddress !== undefined) out.handshakesPerAddress = v.agentHandshakesPerAddress;
    if (v.agentHellosPerAddressPerMinute !== undefined) out.hellosPerAddressPerMinute = v.agentHellosPerAddressPerMinute;
    return out;
  }),
  baseDomain: group(["baseDomain"], (v) => v.baseDomain ?? null),
  dnsServers: group(["dnsServers"], (v) => v.dnsServers ?? []),
  metrics: group(["metrics", "metricsToken"], (v) => {
    if (v.metricsToken !== undefined && v.metrics === false) throw new Error("BERTH_METRICS=off and BERTH_METRICS_TOKEN contradict each other: unset one");
    return { enabled: v.metrics === true || v.metricsToken !== undefined, token: v.metricsToken ?? null };
  }),
  backupStore: group(
    ["dataDir", "backupDir", "backupS3Bucket", "backupS3Endpoint", "backupS3Region", "backupS3AccessKeyId", "backupS3SecretAccessKey", "backupS3Prefix", "backupS3ForcePathStyle"],
    (v): ObjectStoreSettings => {
      if (v.backupS3Bucket === undefined) return { kind: "local", dir: v.backupDir ?? path.join(v.dataDir, "backups") };
      if ((v.backupS3AccessKeyId === undefined) !== (v.backupS3SecretAccessKey === undefined)) {
        throw new Error("BERTH_BACKUP_S3_ACCESS_KEY_ID and BERTH_BACKUP_S3_SECRET_ACCESS_KEY go together: set both, or neither (the SDK's credential chain)");
      }
      return {
        kind: "s3",
        bucket: v.backupS3Bucket,
        region: v.backupS3Region,
        ...(v.backupS3Endpoint === undefined ? {} : { endpoint: v.backupS3Endpoint }),
        ...(v.backupS3AccessKeyId === undefined || v.backupS3SecretAccessKey === undefined ? {} : { accessKeyId: v.backupS3AccessKeyId, secretAccessKey: v.backupS3SecretAccessKey }),
        ...(v.backupS3Prefix === undefined ? {} : { prefix: v.backupS3Prefix }),
        ...(v.backupS3ForcePathStyle === undefined ? {} : { forcePathStyle: v.backupS3ForcePathStyle }),
      };
    },
  ),
  adminPassword: group(["adminPassword"], (v) => v.adminPassword),
  seedDemoUrl: group(["seedDemoUrl"], (v) => v.seedDemoUrl),
  migrationUploadDir: group(["dataDir", "migrationUploadDir"], (v) => v.migrationUploadDir ?? path.join(v.dataDir, "migration-uploads")),
  migrationQuotaBytes: group(["migrationQuotaBytes"], (v) => v.migrationQuotaBytes),
  retention: group(["logRetentionDays", "agentEventRetentionDays", "commandRetentionDays"], (v): RetentionSettings => ({
    logDays: v.logRetentionDays,
    agentEventDays: v.agentEventRetentionDays,
    commandDays: v.commandRetentionDays,
  })),
};

/** The proxy settings read BERTH_ACME_CA_ROOT's file once, at start. */
function proxyGroup(read: (file: string) => string) {
  return group(["proxyImage", "acmeCa", "acmeCaRoot", "acmeEmail"], (v): ProxySettings => {
    let root: string | null = null;
    if (v.acmeCaRoot !== undefined) {
      try {
        root = read(v.acmeCaRoot);
      } catch (err) {
        throw new Error(`BERTH_ACME_CA_ROOT names a file that cannot be read (${v.acmeCaRoot}): ${(err as Error).message}`);
      }
      if (!root.includes("-----BEGIN CERTIFICATE-----")) throw new Error(`BERTH_ACME_CA_ROOT must name a PEM file holding a certificate, and ${v.acmeCaRoot} holds none`);
    }
    return { image: v.proxyImage, acme_ca: v.acmeCa ?? null, acme_ca_root: root, acme_email: v.acmeEmail ?? null };
  });
}

export type Config = Pick<Values, (typeof GROUPS.config.keys)[number]>;

/** Where it listens, its database and data directory, its log level and BERTH_MASTER_KEY. */
export function loadConfig(env: SettingsEnv = process.env): Config {
  return fromEnv(GROUPS.config, env);
}

/** Where the agent executables and installers are served from (npm run build:agent's output). */
export function agentDistDir(env: SettingsEnv = process.env): string {
  return fromEnv(GROUPS.agentDistDir, env);
}

/** The URL servers reach this control plane on (install.sh's default --url); else each request's origin. */
export function publicUrl(env: SettingsEnv = process.env): string | undefined {
  return fromEnv(GROUPS.publicUrl, env);
}

/** The hosts, addresses and CIDR ranges outgoing requests (webhooks) may reach although private or loopback. */
export function outboundAllowList(env: SettingsEnv = process.env): string[] {
  return fromEnv(GROUPS.outboundAllow, env);
}

/** Which proxies' X-Forwarded-For to believe, as Fastify's trustProxy takes it; undefined: none. */
export function trustProxySetting(env: SettingsEnv = process.env): boolean | number | string[] | undefined {
  return fromEnv(GROUPS.trustProxy, env);
}

export function registrationMode(env: SettingsEnv = process.env): Values["registration"] {
  return fromEnv(GROUPS.registration, env);
}

/** Outgoing mail; without an SMTP URL, messages are written to the log (development: the invitation link is there). */
export function mailSettings(env: SettingsEnv = process.env): { smtpUrl?: string; from: string } {
  return fromEnv(GROUPS.mail, env);
}

/** The DNS servers domain claims are verified through; empty: the system's. */
export function dnsServersSetting(env: SettingsEnv = process.env): string[] {
  return fromEnv(GROUPS.dnsServers, env);
}

/** The agent link's limits an operator set; the unset ones are left to modules/agents/link/limits.ts. */
export function agentLimitSettings(env: SettingsEnv = process.env): Partial<Record<"logLinesPerMinute" | "logBytesPerMinute" | "handshakesPerAddress" | "hellosPerAddressPerMinute", number>> {
  return fromEnv(GROUPS.agentLimits, env);
}

/** The domain under which environments without a domain of their own get a generated name; null: none. */
export function baseDomainSetting(env: SettingsEnv = process.env): string | null {
  return fromEnv(GROUPS.baseDomain, env);
}

/** Every server's reverse proxy, sent with each deploy. */
export function proxySettings(env: SettingsEnv = process.env, read: (file: string) => string = readText): ProxySettings {
  return fromEnv(proxyGroup(read), env);
}

/** Where backups are kept once their server uploaded them: an S3-compatible bucket, else a folder. */
export function backupStoreSettings(env: SettingsEnv = process.env, dataDir?: string): ObjectStoreSettings {
  return fromEnv(group(GROUPS.backupStore.keys, (v, e) => GROUPS.backupStore.build(dataDir === undefined ? v : { ...v, dataDir }, e)), env);
}

/** Where resumable migration uploads are assembled before they move into the backup store. */
export function migrationUploadDir(env: SettingsEnv = process.env, dataDir?: string): string {
  return fromEnv(group(GROUPS.migrationUploadDir.keys, (v, e) => GROUPS.migrationUploadDir.build(dataDir === undefined ? v : { ...v, dataDir }, e)), env);
}

/** Bytes one organisation's migration backups may take, stored and under way (modules/migrations/intake/upload-limits.ts). */
export function migrationQuotaBytes(env: SettingsEnv = process.env): number {
  return fromEnv(GROUPS.migrationQuotaBytes, env);
}

/** GET /metrics: off, open (BERTH_METRICS=on) or behind a bearer token (BERTH_METRICS_TOKEN). */
export function metricsSetting(env: SettingsEnv = process.env): { enabled: boolean; token: string | null } {
  return fromEnv(GROUPS.metrics, env);
}

/** How long deployment_logs, agent_events and ended agent_commands are kept (modules/retention/retention.ts). */
export function retentionSettings(env: SettingsEnv = process.env): RetentionSettings {
  return fromEnv(GROUPS.retention, env);
}

/** npm run admin:create: the new account's password, else it is read from stdin. */
export function adminPassword(env: SettingsEnv = process.env): string | undefined {
  return fromEnv(GROUPS.adminPassword, env);
}

/** npm run seed:demo: the control plane's URL in the links it prints. */
export function seedDemoUrl(env: SettingsEnv = process.env): string | undefined {
  return fromEnv(GROUPS.seedDemoUrl, env);
}

type Built<G> = G extends Group<ControlPlaneSettingKey, infer T> ? T : never;
export type StartSettings = { [K in keyof typeof GROUPS]: Built<(typeof GROUPS)[K]> } & { proxy: ProxySettings };

/**
 * Every setting, read at start: throws a SettingsError listing every problem (one line each,
 * naming its setting), so one restart fixes them all.
 */
export function loadStartSettings(env: SettingsEnv = process.env, read: (file: string) => string = readText): StartSettings {
  const reading = readSettings(CONTROL_PLANE_SETTINGS, env);
  for (const warning of reading.warnings) warnOnce(warning);
  const problems = [...reading.problems];
  const out: Record<string, unknown> = {};
  for (const [name, g] of Object.entries({ ...GROUPS, proxy: proxyGroup(read) }) as [string, Group<ControlPlaneSettingKey, unknown>][]) {
    // A group whose own settings failed has been reported already.
    if (g.keys.some((k) => reading.failed.has(k))) continue;
    try {
      const own = Object.fromEntries(g.keys.map((k) => [k, reading.values[k]])) as Pick<Values, ControlPlaneSettingKey>;
      out[name] = g.build(own, env);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length > 0) throw new SettingsError(problems);
  return out as StartSettings;
}
