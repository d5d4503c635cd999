// Which control-plane URLs the agent accepts.
import { describe, expect, it } from "vitest";
import { checkControlPlaneUrl, connectUrl, isLoopbackHost } from "./control-plane-url.ts";

describe("control plane URL", () => {
  it("takes https anywhere and turns it into wss, keeping a path prefix", () => {
    expect(checkControlPlaneUrl("https://berth.example.com/", false)).toEqual({
      ok: true,
      url: { http: "https://berth.example.com", ws: "wss://berth.example.com" },
    });
    const prefixed = checkControlPlaneUrl("https://example.com:8443/berth//", false);
    expect(prefixed).toEqual({ ok: true, url: { http: "https://example.com:8443/berth", ws: "wss://example.com:8443/berth" } });
    if (prefixed.ok) expect(connectUrl(prefixed.url, "/agent/v1/connect")).toBe("wss://example.com:8443/berth/agent/v1/connect");
  });

  it.each(["http://localhost:3000", "http://127.0.0.1:3000", "http://127.8.9.10", "http://[::1]:3000", "http://LOCALHOST"])(
    "takes plain http to this machine: %s",
    (url) => {
      const checked = checkControlPlaneUrl(url, false);
      expect(checked.ok).toBe(true);
      if (checked.ok) expect(checked.url.ws.startsWith("ws://")).toBe(true);
    },
  );

  it.each(["http://berth.example.com", "http://10.0.0.5:3000", "http://128.0.0.1", "http://[::2]", "http://localhost.evil.com"])(
    "refuses plain http to another machine: %s",
    (url) => {
      expect(checkControlPlaneUrl(url, false)).toMatchObject({ ok: false, message: expect.stringContaining("refusing http://") });
      expect(checkControlPlaneUrl(url, true).ok).toBe(true);
    },
  );

  it.each([
    ["not a url", "is not a URL"],
    ["ftp://example.com", "must start with https://"],
    ["https://user:pw@example.com", "user name or password"],
    ["https://example.com/?x=1", "query or a fragment"],
  ])("refuses %s", (url, message) => {
    expect(checkControlPlaneUrl(url, true)).toMatchObject({ ok: false, message: expect.stringContaining(message) });
  });

  it("knows loopback hosts", () => {
    expect(["localhost", "127.0.0.1", "127.255.255.254", "[::1]", "::1"].every(isLoopbackHost)).toBe(true);
    expect(["0.0.0.0", "10.0.0.1", "example.com", "::", "[::ffff:7f00:1]"].some(isLoopbackHost)).toBe(false);
  });
});
