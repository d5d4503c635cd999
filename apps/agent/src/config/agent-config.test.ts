// Flags, then environment, then defaults; every mistake one clear line.
import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_DOCKER_SOCKET, DEFAULT_STATE_DIR, loadConfig } from "./agent-config.ts";

describe("agent config", () => {
  it("uses the defaults when nothing is set", () => {
    expect(loadConfig("run", {}, {})).toEqual({
      command: "run",
      stateDir: DEFAULT_STATE_DIR,
      insecure: false,
      dockerSocket: DEFAULT_DOCKER_SOCKET,
      logLevel: "info",
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
});
