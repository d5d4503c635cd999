import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import {
  checkCommand,
  COMMAND_PARAMS,
  COMMAND_TYPES,
  isCommandType,
  LogsTailParams,
  type SignedCommand,
} from "./commands.ts";
import { DeployParams } from "./deploy-params.ts";
import { unsignedDeploy } from "./test-fixtures.ts";

const deployParams = unsignedDeploy().params;
const ids = { deployment_id: deployParams.deployment_id, environment_id: deployParams.environment_id };
const backupId = "c0ffee00-1234-4abc-8def-0123456789ab";

describe("command params", () => {
  it("has a params schema for every command type", () => {
    expect(Object.keys(COMMAND_PARAMS).sort()).toEqual([...COMMAND_TYPES].sort());
    expect(isCommandType("logs.tail")).toBe(true);
    expect(isCommandType("rollback")).toBe(false);
    expect(isCommandType("constructor")).toBe(false);
  });

  it.each([
    ["deploy", deployParams],
    ["redeploy", { ...deployParams, git: null, domain: null, env: {} }],
    [
      "deploy",
      {
        ...deployParams,
        modules: { upgrade: ["sale_custom", "l10n_fr"] },
        init: { without_demo: true, language: "fr_FR", country: "FR" },
        admin_passwd: "a-long-master-password",
      },
    ],
    ["deploy", { ...deployParams, modules: { upgrade: "all" }, init: {} }],
    ["restart", ids],
    ["start", ids],
    ["stop", ids],
    ["destroy", { ...ids, delete_data: true }],
    ["backup", { ...ids, backup_id: backupId }],
    ["restore", { ...ids, backup_id: backupId }],
    ["logs.tail", { environment_id: ids.environment_id, lines: 200 }],
    ["diagnostics", {}],
  ] as const)("accepts valid %s params", (type, params) => {
    expect(Value.Check(COMMAND_PARAMS[type], params)).toBe(true);
  });

  it.each([
    ["an unknown field", { ...deployParams, privileged: true }],
    ["an unknown nested field", { ...deployParams, resources: { ...deployParams.resources, gpu: 1 } }],
    ["zero cpu", { ...deployParams, resources: { ...deployParams.resources, cpu_cores: 0 } }],
    ["fractional ram", { ...deployParams, resources: { ...deployParams.resources, ram_mb: 1.5 } }],
    ["a bad env var name", { ...deployParams, env: { "1BAD": "x" } }],
    ["a non-string env value", { ...deployParams, env: { GOOD: 1 } }],
    ["an uppercase domain", { ...deployParams, domain: "ERP.example.com" }],
    ["a single-label domain", { ...deployParams, domain: "localhost" }],
    ["a short commit", { ...deployParams, git: { url: "u", branch: "main", commit: "abc" } }],
    ["a missing git field", { ...deployParams, git: { url: "u", branch: "main" } }],
    ["an unknown upgrade mode", { ...deployParams, modules: { upgrade: "everything" } }],
    ["a module name that is not a folder name", { ...deployParams, modules: { upgrade: ["../x"] } }],
    ["a short master password", { ...deployParams, admin_passwd: "admin" }],
    ["a master password with a line break", { ...deployParams, admin_passwd: "long-enough-password\nworkers = 0" }],
    ["an unknown init field", { ...deployParams, init: { demo: true } }],
  ])("rejects deploy params with %s", (_name, params) => {
    expect(Value.Check(DeployParams, params)).toBe(false);
  });

  it("bounds logs.tail lines to 1..10000", () => {
    const base = { environment_id: ids.environment_id };
    expect(Value.Check(LogsTailParams, { ...base, lines: 1 })).toBe(true);
    expect(Value.Check(LogsTailParams, { ...base, lines: 10_000 })).toBe(true);
    expect(Value.Check(LogsTailParams, { ...base, lines: 0 })).toBe(false);
    expect(Value.Check(LogsTailParams, { ...base, lines: 10_001 })).toBe(false);
  });
});

describe("checkCommand", () => {
  const signed = { ...unsignedDeploy(), key_id: "k", signature: "" } as SignedCommand;

  it("narrows a known command", () => {
    const result = checkCommand(signed);
    expect(result.ok).toBe(true);
    if (result.ok && result.command.type === "deploy") expect(result.command.params.image).toBe(deployParams.image);
  });

  it("reports unknown types and bad params", () => {
    expect(checkCommand({ ...signed, type: "reboot" })).toMatchObject({ ok: false, code: "unsupported_command" });
    expect(checkCommand({ ...signed, params: {} })).toMatchObject({ ok: false, code: "invalid_params" });
  });

  it("says a parameter it does not know calls for an agent update (a newer control plane sent it)", () => {
    const result = checkCommand({ ...signed, params: { ...deployParams, a_future_field: 1 } });
    expect(result).toMatchObject({ ok: false, code: "invalid_params" });
    if (!result.ok) expect(result.message).toBe("params: /a_future_field: Unexpected property (a parameter this agent does not know: update the agent to the control plane's release)");
    const wrongType = checkCommand({ ...signed, params: { ...deployParams, image: 1 } });
    if (!wrongType.ok) expect(wrongType.message).not.toContain("update the agent");
  });
});
