import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { AGENT_VERSION } from "./version.ts";

describe("agent version", () => {
  it("matches the package's version", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    expect(AGENT_VERSION).toBe(pkg.version);
  });
});
