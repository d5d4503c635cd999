// The berth CLI as it ships: the single executable (npm run build:cli), copied alone into an
// empty directory and run with no Node on the PATH and only the environment the test gives it,
// against a real control plane.
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { CLI_VERSION } from "../../apps/control-plane/src/cli/main.ts";
import { cliExecutable } from "../installers/cli-executable.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { urlOf } from "../support/sse.ts";

const exec = promisify(execFile);

let cp: TestControlPlane;
let d: DemoOrganization;
let bin: string;
let env: Record<string, string>;

beforeAll(async () => {
  const exe = await cliExecutable();
  const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-binary-"));
  bin = path.join(dir, "berth");
  copyFileSync(exe.file, bin);
  mkdirSync(path.join(dir, "empty-bin"));
  cp = await startControlPlane({ listen: true });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  // No Node anywhere on the PATH, a config directory of its own.
  env = { PATH: path.join(dir, "empty-bin"), HOME: dir, XDG_CONFIG_HOME: dir };
}, 600_000);

afterAll(async () => cp?.close());

it("prints its version", async () => {
  const { stdout } = await exec(bin, ["--version"], { env });
  expect(stdout.trim()).toBe(CLI_VERSION);
});

it("lists the projects of a control plane with an API key", async () => {
  const { stdout } = await exec(bin, ["projects", "list", "--json"], { env: { ...env, BERTH_URL: urlOf(cp), BERTH_API_KEY: d.api_keys.org_ro } });
  expect((JSON.parse(stdout) as { id: string }[]).map((p) => p.id)).toEqual([d.project_id]);
});
