// The settings loader: typed values, defaults, former names, and every problem at once.
import { describe, expect, it } from "vitest";
import { readSettings, setting, SettingsError, settingsOrThrow } from "./settings.ts";

const port = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`BERTH_PORT must be a port number, got ${JSON.stringify(raw)}`);
  return n;
};
const DECLS = {
  port: setting({ name: "BERTH_PORT", oldNames: ["PORT"], default: "3000", description: "port", parse: port }),
  mode: setting({
    name: "BERTH_MODE",
    default: "open",
    description: "mode",
    parse: (raw) => {
      if (raw !== "open" && raw !== "closed") throw new Error(`BERTH_MODE must be open or closed, got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  url: setting({ name: "BERTH_URL", description: "url", parse: (raw) => new URL(raw).origin }),
  password: setting({ name: "BERTH_PASSWORD", secret: true, keepSpaces: true, description: "password", parse: (raw) => raw }),
};

describe("readSettings", () => {
  it("parses defaults like values, leaves settings without a default undefined, and trims", () => {
    const { values, problems, warnings } = readSettings(DECLS, {});
    expect(values).toEqual({ port: 3000, mode: "open", url: undefined, password: undefined });
    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    expect(readSettings(DECLS, { BERTH_PORT: " 8080 ", BERTH_URL: "https://x.example/a", BERTH_MODE: "" }).values).toMatchObject({ port: 8080, mode: "open", url: "https://x.example" });
  });

  it("keeps a password as written", () => {
    expect(readSettings(DECLS, { BERTH_PASSWORD: " two words " }).values.password).toBe(" two words ");
  });

  it("reads a former name, with a warning naming the new one; the new name wins", () => {
    const old = readSettings(DECLS, { PORT: "4000" });
    expect(old.values.port).toBe(4000);
    expect(old.warnings).toEqual(["PORT is deprecated: set BERTH_PORT instead"]);
    const both = readSettings(DECLS, { PORT: "4000", BERTH_PORT: "5000" });
    expect(both.values.port).toBe(5000);
    expect(both.warnings).toEqual([]);
  });

  it("lists every problem, one line each naming its setting, not just the first", () => {
    const reading = readSettings(DECLS, { BERTH_PORT: "http", BERTH_MODE: "maybe" });
    expect(reading.problems).toEqual(['BERTH_PORT must be a port number, got "http"', 'BERTH_MODE must be open or closed, got "maybe"']);
    expect([...reading.failed]).toEqual(["port", "mode"]);
    try {
      settingsOrThrow(DECLS, { BERTH_PORT: "http", PORT: "1", BERTH_MODE: "maybe" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(SettingsError);
      expect((error as SettingsError).problems).toHaveLength(2);
      expect((error as SettingsError).message.split("\n")).toHaveLength(2);
    }
  });

  it("reads only the settings asked for", () => {
    expect(settingsOrThrow(DECLS, { BERTH_PORT: "http" }, ["mode"])).toEqual({ mode: "open" });
  });
});
