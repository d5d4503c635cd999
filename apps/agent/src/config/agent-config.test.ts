// Flags, then environment, then defaults; every mistake one clear line.
import { describe, expect, it } from "vitest";
import { DEFAULT_DOCKER_SOCKET, DEFAULT_STATE_DIR, loadConfig } from "./agent-config.ts";
import { ConfigError } from "./config-error.ts";
import { DEFAULT_PROXY_HOST } from "../proxy/proxy-container.ts";
import { DEFAULT_MAIL_CATCHER } from "../mail/mail-catcher-host.ts";

describe("agent config", () => {
  it("uses the defaults when nothing is set", () => {
    expect(loadConfig("run", {}, {})).toEqual({
      command: "run",
      stateDir: DEFAULT_STATE_DIR,
      insecure: false,
      dockerSocket: DEFAULT_DOCKER_SOCKET,
      logLevel: "info",
      proxy: DEFAULT_PROXY_HOST,
      mail: DEFAULT_MAIL_CATCHER,
    });
  });

  it("reads the mail catcher's network and port (auto: the system chooses)", () => {
    expect(loadConfig("run", {}, { BERTH_MAIL_NETWORK: "mail-net", BERTH_MAIL_PORT: "auto" })).toMatchObject({ mail: { network: "mail-net", port: 0 } });
    expect(loadConfig("run", {}, { BERTH_MAIL_PORT: "2526" })).toMatchObject({ mail: { network: "berth-mail", port: 2526 } });
    expect(() => loadConfig("run", {}, { BERTH_MAIL_PORT: "70000" })).toThrow(/BERTH_MAIL_PORT/);
  });

  it("reads the proxy's settings: ports, address, public addresses, resolvers, intervals", () => {
    const env = {
      BERTH_PROXY_NAME: "edge",
      BERTH_PROXY_HTTP_PORT: "8080",
      BERTH_PROXY_HTTPS_PORT: "auto",
      BERTH_PROXY_BIND: "127.0.0.1",
      BERTH_PUBLIC_ADDRESSES: "203.0.113.7, 2001:db8::7",
      BERTH_DNS_SERVERS: "127.0.0.1:5353,9.9.9.9,[2001:db8::53]:53",
      BERTH_PROXY_CHECK_INTERVAL: "30",
      BERTH_CERTIFICATE_WAIT: "0",
    };
    expect(loadConfig("run", {}, env)).toMatchObject({
      proxy: {
        name: "edge",
        httpPort: "8080",
        httpsPort: "",
        bindAddress: "127.0.0.1",
        publicAddresses: ["203.0.113.7", "2001:db8::7"],
        dnsServers: ["127.0.0.1:5353", "9.9.9.9", "[2001:db8::53]:53"],
        checkIntervalMs: 30_000,
        certificateWaitMs: 0,
      },
    });
  });

  it("reads the environment, and lets flags win over it", () => {
    const env = {
      BERTH_URL: "https://env.example.com",
      BERTH_STATE_DIR: "/srv/berth",
      BERTH_INSECURE: "yes",
      BERTH_DOCKER_SOCKET: "/run/docker.sock",
      BERTH_LOG_LEVEL: "DEBUG",
      BERTH_TOKEN: "env-token",
    };
    expect(loadConfig("enroll", {}, env)).toMatchObject({
      url: { http: "https://env.example.com" },
      token: "env-token",
      stateDir: "/srv/berth",
      insecure: true,
      dockerSocket: "/run/docker.sock",
      logLevel: "debug",
      force: false,
    });
    expect(
      loadConfig("enroll", { url: "https://flag.example.com", token: "flag-token", "state-dir": "/opt/b", force: true }, env),
    ).toMatchObject({ url: { http: "https://flag.example.com" }, token: "flag-token", stateDir: "/opt/b", force: true });
  });

  it.each([
    ["enroll", {}, {}, "enroll needs the control plane URL"],
    ["enroll", { url: "https://x.example.com" }, {}, "enroll needs the one-time enrolment token"],
    ["enroll", { url: "http://x.example.com", token: "t" }, {}, "refusing http:// to x.example.com"],
    ["run", { url: "https://x.example.com" }, {}, '--url is not an option of "run"'],
    ["run", {}, { BERTH_INSECURE: "maybe" }, "BERTH_INSECURE must be true or false"],
    ["run", {}, { BERTH_LOG_LEVEL: "loud" }, "BERTH_LOG_LEVEL must be one of"],
    ["run", {}, { BERTH_DOCKER_SOCKET: "docker.sock" }, "BERTH_DOCKER_SOCKET must be an absolute path"],
    ["run", { "state-dir": " " }, {}, "--state-dir is empty"],
    ["run", {}, { BERTH_PROXY_HTTP_PORT: "80000" }, 'BERTH_PROXY_HTTP_PORT must be a port number or "auto"'],
    ["run", {}, { BERTH_PROXY_NAME: "a b" }, "BERTH_PROXY_NAME must be a Docker container name"],
    ["run", {}, { BERTH_PROXY_BIND: "localhost" }, "BERTH_PROXY_BIND must be an IP address"],
    ["run", {}, { BERTH_PUBLIC_ADDRESSES: "203.0.113.7,example.com" }, 'BERTH_PUBLIC_ADDRESSES must list IP addresses separated by commas (got "example.com")'],
    ["run", {}, { BERTH_DNS_SERVERS: "127.0.0.1:99999" }, "BERTH_DNS_SERVERS must list IP addresses"],
    ["run", {}, { BERTH_PROXY_CHECK_INTERVAL: "1" }, "BERTH_PROXY_CHECK_INTERVAL must be a number of seconds from 5 to 86400"],
  ] as const)("refuses %s %j %j", (command, flags, env, message) => {
    expect(() => loadConfig(command, flags, env)).toThrow(ConfigError);
    expect(() => loadConfig(command, flags, env)).toThrow(message);
  });

  it("takes http:// to another machine with --insecure or BERTH_INSECURE", () => {
    expect(loadConfig("enroll", { url: "http://x.example.com", token: "t", insecure: true }, {})).toMatchObject({
      url: { ws: "ws://x.example.com" },
    });
    expect(loadConfig("enroll", { url: "http://x.example.com", token: "t" }, { BERTH_INSECURE: "1" })).toMatchObject({
      insecure: true,
    });
  });

  it("lists every problem at once, one line each, flags and environment alike", () => {
    let error: unknown;
    try {
      loadConfig("run", { url: "https://x.example.com" }, { BERTH_LOG_LEVEL: "loud", BERTH_PROXY_HTTP_PORT: "80000", BERTH_BACKUPS_KEEP_LOCAL: "500" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      '--url is not an option of "run"',
      expect.stringMatching(/^BERTH_LOG_LEVEL must be one of /),
      'BERTH_BACKUPS_KEEP_LOCAL must be a whole number from 0 to 100 (got "500")',
      'BERTH_PROXY_HTTP_PORT must be a port number or "auto" (got "80000")',
    ]);
  });

  it("takes an empty variable as unset", () => {
    expect(loadConfig("status", {}, { BERTH_STATE_DIR: "", BERTH_LOG_LEVEL: " " })).toMatchObject({ stateDir: DEFAULT_STATE_DIR, logLevel: "info" });
  });
});
