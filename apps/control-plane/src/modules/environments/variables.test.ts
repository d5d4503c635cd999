import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { seal } from "../../lib/master-key.ts";
import { checkVariableName, checkVariableValue, extraDataView, openSnapshot, sealedSnapshot } from "./variables.ts";

const codeOf = (fn: () => void) => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe("variable rules", () => {
  it("takes names of the protocol's pattern and refuses reserved ones in any case", () => {
    for (const ok of ["A", "_x", "SMTP_PASSWORD", "host_name", "a1"]) expect(codeOf(() => checkVariableName(ok)), ok).toBeNull();
    for (const bad of ["", "1A", "A-B", "A B", "É", "x".repeat(256)]) expect(codeOf(() => checkVariableName(bad)), bad).toBe("variable_name_invalid");
    for (const reserved of ["HOST", "port", "User", "PASSWORD", "PGPASSWORD", "BERTH_X", "berth_y"]) expect(codeOf(() => checkVariableName(reserved)), reserved).toBe("variable_reserved");
  });

  it("counts a value's size in UTF-8 bytes", () => {
    expect(codeOf(() => checkVariableValue("A", "x".repeat(32 * 1024)))).toBeNull();
    expect(codeOf(() => checkVariableValue("A", "é".repeat(16 * 1024 + 1)))).toBe("variable_value_too_large");
  });
});

describe("the configuration snapshot", () => {
  it("holds sealed values, opens with the master key, leaves out what another key sealed, and shows names only", () => {
    const key = randomBytes(32);
    const other = randomBytes(32);
    const column = { B: { value_enc: seal(key, "two"), updated_at: "t" }, A: { value_enc: seal(key, "one"), updated_at: "t" }, C: { value_enc: seal(other, "x"), updated_at: "t" } };
    const snapshot = sealedSnapshot(column);
    expect(JSON.stringify(snapshot)).not.toContain("one");
    expect(openSnapshot(key, snapshot)).toEqual({ A: "one", B: "two" });
    expect(extraDataView({ retry_of: "r", config: { cpu_cores: 1, variables: snapshot } })).toEqual({ retry_of: "r", config: { cpu_cores: 1, variables: ["A", "B", "C"] } });
    expect(extraDataView(null)).toEqual({});
    expect(sealedSnapshot(null)).toEqual({});
  });
});
