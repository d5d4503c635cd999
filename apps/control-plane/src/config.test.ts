// Settings read from the environment: a bad value stops the start with a clear message.
import { describe, expect, it } from "vitest";
import { agentLimitSettings, trustProxySetting } from "./config.ts";

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
