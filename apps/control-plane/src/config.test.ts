// Settings read from the environment: a bad value stops the start with a clear message.
import { describe, expect, it } from "vitest";
import { SettingsError } from "@berth/protocol";
import { agentLimitSettings, backupStoreSettings, baseDomainSetting, loadConfig, loadStartSettings, metricsSetting, proxySettings, trustProxySetting } from "./config.ts";

describe("BERTH_TRUST_PROXY", () => {
  it("takes true, a hop count or addresses and ranges, and refuses anything else", () => {
    expect(trustProxySetting({})).toBeUndefined();
    expect(trustProxySetting({ BERTH_TRUST_PROXY: "true" })).toBe(true);
    expect(trustProxySetting({ BERTH_TRUST_PROXY: "1" })).toBe(1);
    expect(trustProxySetting({ BERTH_TRUST_PROXY: "127.0.0.1, 10.0.0.0/8,::1" })).toEqual(["127.0.0.1", "10.0.0.0/8", "::1"]);
    for (const bad of ["10.0.0.0/33", "proxy.local", "10.0.0.1/8/2", "::1/129"]) {
      expect(() => trustProxySetting({ BERTH_TRUST_PROXY: bad }), bad).toThrow(/BERTH_TRUST_PROXY/);
    }
  });
});

describe("BERTH_AGENT_* link limits", () => {
  it("takes positive whole numbers, leaves the unset ones to the defaults, and refuses anything else", () => {
    expect(agentLimitSettings({})).toEqual({});
    expect(agentLimitSettings({ BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE: "5000", BERTH_AGENT_LOG_LINES_PER_MINUTE: " 120000 " })).toEqual({
      hellosPerAddressPerMinute: 5000,
      logLinesPerMinute: 120_000,
    });
    for (const bad of ["0", "-1", "1.5", "lots", "1e6"]) {
      expect(() => agentLimitSettings({ BERTH_AGENT_HANDSHAKES_PER_ADDRESS: bad }), bad).toThrow(/BERTH_AGENT_HANDSHAKES_PER_ADDRESS/);
    }
  });
});

describe("BERTH_BASE_DOMAIN", () => {
  it("takes a host name (stored lowercase) and refuses anything else", () => {
    expect(baseDomainSetting({})).toBeNull();
    expect(baseDomainSetting({ BERTH_BASE_DOMAIN: " Envs.Example.NET " })).toBe("envs.example.net");
    for (const bad of ["localhost", "*.example.net", "example.net.", "192.0.2.1", `${"a.".repeat(95)}net`]) {
      expect(() => baseDomainSetting({ BERTH_BASE_DOMAIN: bad }), bad).toThrow(/BERTH_BASE_DOMAIN/);
    }
  });
});

describe("the proxy settings", () => {
  const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  it("default to caddy:2 with Let's Encrypt", () => {
    expect(proxySettings({})).toEqual({ image: "caddy:2", acme_ca: null, acme_ca_root: null, acme_email: null });
  });
  it("read the CA root once from its file", () => {
    const env = { BERTH_PROXY_IMAGE: "caddy:2.8", BERTH_ACME_CA: "https://pebble:14000/dir", BERTH_ACME_CA_ROOT: "/etc/berth/pebble.pem", BERTH_ACME_EMAIL: "ops@example.com" };
    expect(proxySettings(env, (f) => (f === "/etc/berth/pebble.pem" ? PEM : ""))).toEqual({ image: "caddy:2.8", acme_ca: "https://pebble:14000/dir", acme_ca_root: PEM, acme_email: "ops@example.com" });
  });
  it("stop the start with a clear message when a value is wrong", () => {
    const missing = (f: string) => {
      throw new Error(`ENOENT: no such file or directory, open '${f}'`);
    };
    expect(() => proxySettings({ BERTH_ACME_CA_ROOT: "/nope.pem" }, missing)).toThrow(/BERTH_ACME_CA_ROOT .*\/nope\.pem.*ENOENT/);
    expect(() => proxySettings({ BERTH_ACME_CA_ROOT: "/x.pem" }, () => "not a certificate")).toThrow(/BERTH_ACME_CA_ROOT .*PEM/);
    expect(() => proxySettings({ BERTH_ACME_CA: "http://acme.example.com/dir" })).toThrow(/BERTH_ACME_CA .*https/);
    expect(() => proxySettings({ BERTH_ACME_EMAIL: "not an address" })).toThrow(/BERTH_ACME_EMAIL/);
  });
});

describe("the backup store settings", () => {
  it("default to a folder in the data directory, or BERTH_BACKUP_DIR", () => {
    expect(backupStoreSettings({}, "/srv/berth")).toEqual({ kind: "local", dir: "/srv/berth/backups" });
    expect(backupStoreSettings({ BERTH_BACKUP_DIR: "/mnt/backups" }, "/srv/berth")).toEqual({ kind: "local", dir: "/mnt/backups" });
  });
  it("take an S3-compatible bucket with its endpoint, region, keys and prefix", () => {
    expect(
      backupStoreSettings({
        BERTH_BACKUP_S3_BUCKET: "berth-backups",
        BERTH_BACKUP_S3_ENDPOINT: "http://127.0.0.1:9000/",
        BERTH_BACKUP_S3_ACCESS_KEY_ID: "id",
        BERTH_BACKUP_S3_SECRET_ACCESS_KEY: "secret",
        BERTH_BACKUP_S3_PREFIX: "prod/",
      }, "/srv"),
    ).toEqual({ kind: "s3", bucket: "berth-backups", region: "us-east-1", endpoint: "http://127.0.0.1:9000", accessKeyId: "id", secretAccessKey: "secret", prefix: "prod/" });
  });
  it("stop the start with a clear message when a value is wrong", () => {
    expect(() => backupStoreSettings({ BERTH_BACKUP_S3_BUCKET: "Bad_Bucket" }, "/srv")).toThrow(/BERTH_BACKUP_S3_BUCKET/);
    expect(() => backupStoreSettings({ BERTH_BACKUP_S3_BUCKET: "ok-bucket", BERTH_BACKUP_S3_ACCESS_KEY_ID: "id" }, "/srv")).toThrow(/go together/);
    expect(() => backupStoreSettings({ BERTH_BACKUP_S3_BUCKET: "ok-bucket", BERTH_BACKUP_S3_ENDPOINT: "ftp://x" }, "/srv")).toThrow(/ENDPOINT/);
    expect(() => backupStoreSettings({ BERTH_BACKUP_S3_BUCKET: "ok-bucket", BERTH_BACKUP_S3_PREFIX: "../" }, "/srv")).toThrow(/PREFIX/);
  });
});

describe("BERTH_METRICS and BERTH_METRICS_TOKEN", () => {
  it("are off by default, on openly with on, on behind a bearer token with a token, and refuse nonsense", () => {
    expect(metricsSetting({})).toEqual({ enabled: false, token: null });
    expect(metricsSetting({ BERTH_METRICS: "off" })).toEqual({ enabled: false, token: null });
    expect(metricsSetting({ BERTH_METRICS: "on" })).toEqual({ enabled: true, token: null });
    expect(metricsSetting({ BERTH_METRICS_TOKEN: "s3cret-scrape-token-1" })).toEqual({ enabled: true, token: "s3cret-scrape-token-1" });
    expect(metricsSetting({ BERTH_METRICS: "on", BERTH_METRICS_TOKEN: "s3cret-scrape-token-1" })).toEqual({ enabled: true, token: "s3cret-scrape-token-1" });
    expect(() => metricsSetting({ BERTH_METRICS: "yes" })).toThrow(/BERTH_METRICS must be on or off/);
    expect(() => metricsSetting({ BERTH_METRICS_TOKEN: "short" })).toThrow(/BERTH_METRICS_TOKEN/);
    expect(() => metricsSetting({ BERTH_METRICS: "off", BERTH_METRICS_TOKEN: "s3cret-scrape-token-1" })).toThrow(/contradict/);
  });
});

describe("every setting, read at start", () => {
  it("has typed defaults", () => {
    const s = loadStartSettings({ INIT_CWD: "/srv/berth" });
    expect(s.config).toEqual({ port: 3000, host: "127.0.0.1", logLevel: "info", dataDir: "/srv/berth/.data", embeddedPgPort: 54329, databaseUrl: undefined, masterKey: undefined });
    expect(s.backupStore).toEqual({ kind: "local", dir: "/srv/berth/.data/backups" });
    expect(s.migrationUploadDir).toBe("/srv/berth/.data/migration-uploads");
    expect(s).toMatchObject({ registration: "open", outboundAllow: [], baseDomain: null, metrics: { enabled: false, token: null }, mail: { from: "Berth <no-reply@localhost>" } });
  });

  it("types what it reads: numbers, a 32-byte key, folders relative to where the command was typed", () => {
    const key = Buffer.alloc(32, 9);
    const config = loadConfig({ INIT_CWD: "/home/me", BERTH_PORT: "8080", BERTH_DATA_DIR: "state", BERTH_LOG_LEVEL: "DEBUG", BERTH_MASTER_KEY: key.toString("base64") });
    expect(config).toMatchObject({ port: 8080, dataDir: "/home/me/state", logLevel: "debug" });
    expect(config.masterKey?.equals(key)).toBe(true);
  });

  it("still reads PORT, HOST and LOG_LEVEL, with a warning that names the new name", async () => {
    const warnings: string[] = [];
    const listener = (warning: Error) => warnings.push(warning.message);
    process.on("warning", listener);
    try {
      const config = loadConfig({ PORT: "4000", HOST: "0.0.0.0", LOG_LEVEL: "warn" });
      await new Promise((resolve) => setImmediate(resolve));
      expect(config).toMatchObject({ port: 4000, host: "0.0.0.0", logLevel: "warn" });
    } finally {
      process.off("warning", listener);
    }
    expect(warnings).toEqual(expect.arrayContaining(["PORT is deprecated: set BERTH_PORT instead", "HOST is deprecated: set BERTH_HOST instead", "LOG_LEVEL is deprecated: set BERTH_LOG_LEVEL instead"]));
  });

  it("lists every problem, one line each naming its setting", () => {
    let problems: readonly string[] = [];
    try {
      loadStartSettings({
        BERTH_PORT: "http",
        BERTH_LOG_LEVEL: "loud",
        BERTH_REGISTRATION: "maybe",
        BERTH_MASTER_KEY: "c2hvcnQ=",
        BERTH_METRICS: "off",
        BERTH_METRICS_TOKEN: "s3cret-scrape-token-1",
        BERTH_BACKUP_S3_BUCKET: "ok-bucket",
        BERTH_BACKUP_S3_ACCESS_KEY_ID: "id",
        BERTH_ACME_CA_ROOT: "/nonexistent/berth-ca.pem",
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(SettingsError);
      problems = (error as SettingsError).problems;
    }
    expect(problems).toEqual([
      'BERTH_PORT must be a port number (0-65535), got "http"',
      expect.stringMatching(/^BERTH_LOG_LEVEL must be one of fatal, .*, got "loud"$/),
      'BERTH_MASTER_KEY must hold 32 bytes, base64-encoded (openssl rand -base64 32)',
      'BERTH_REGISTRATION must be one of open, invite, closed, got "maybe"',
      "BERTH_METRICS=off and BERTH_METRICS_TOKEN contradict each other: unset one",
      expect.stringMatching(/^BERTH_BACKUP_S3_ACCESS_KEY_ID and BERTH_BACKUP_S3_SECRET_ACCESS_KEY go together/),
      expect.stringMatching(/^BERTH_ACME_CA_ROOT names a file that cannot be read \(\/nonexistent\/berth-ca\.pem\)/),
    ]);
  });
});
