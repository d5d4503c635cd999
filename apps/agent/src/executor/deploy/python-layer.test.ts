// The Python layer's install script, run by this machine's sh and python3 (the deploy runs
// the same script in a one-off container of the ERP image): a requirement goes into a
// virtual environment in the layer's folder, <layer>/site points at its site-packages, and
// the system's python3 imports the package with PYTHONPATH=<layer>/site only. A second run
// keeps the venv and its packages. Skipped without python3.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { erpEnvironment, INSTALL_SCRIPT, PYTHON_LAYER_SITE } from "./python-layer.ts";

const execFileAsync = promisify(execFile);
const hasPython = (() => {
  try {
    execFileSync("python3", ["-c", "import venv"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** A wheel made by hand (a zip with the package and its dist-info): pip installs it without any index. */
async function makeWheel(dir: string): Promise<string> {
  const script = `
import zipfile, hashlib, base64, sys
path = sys.argv[1]
files = {
  "berth_layer_probe/__init__.py": "VALUE = 'from the layer'\\n",
  "berth_layer_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: berth-layer-probe\\nVersion: 1.0\\n",
  "berth_layer_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: hand\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(path, "w") as z:
  for name, text in files.items():
    data = text.encode()
    z.writestr(name, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(data)}")
  record.append("berth_layer_probe-1.0.dist-info/RECORD,,")
  z.writestr("berth_layer_probe-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
`;
  const wheel = join(dir, "berth_layer_probe-1.0-py3-none-any.whl");
  await execFileAsync("python3", ["-c", script, wheel]);
  return wheel;
}

describe.skipIf(!hasPython)("the Python layer's install script", () => {
  const dir = mkdtempSync(join(tmpdir(), "berth-python-layer-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("installs requirements into a venv in the layer that the system python3 reaches through PYTHONPATH=<layer>/site", async () => {
    const wheel = await makeWheel(dir);
    const requirements = join(dir, "requirements.txt");
    await writeFile(requirements, `${wheel}\n`);
    const layer = join(dir, "layer");
    const env = { ...process.env, PIP_NO_INDEX: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };
    const run = () => execFileAsync("sh", ["-c", INSTALL_SCRIPT, "test", layer, requirements], { env, timeout: 120_000 });
    const { stdout } = await run();
    expect(stdout).toMatch(/berth: requirements installed into .*site-packages/);
    expect(existsSync(join(layer, "venv", "bin", "python"))).toBe(true);
    expect(readlinkSync(join(layer, "site"))).toMatch(/venv\/lib\/python3\.\d+\/site-packages$/);
    const probe = ["-c", "import berth_layer_probe; print(berth_layer_probe.VALUE)"];
    await expect(execFileAsync("python3", probe, { env: { ...process.env, PYTHONPATH: "" } })).rejects.toThrow();
    expect((await execFileAsync("python3", probe, { env: { ...process.env, PYTHONPATH: join(layer, "site") } })).stdout.trim()).toBe("from the layer");
    // Again (the next deploy): the venv is kept and the requirement is already satisfied.
    expect((await run()).stdout).toContain("berth: requirements installed");
  }, 180_000);

  it("puts the layer first on the ERP's PYTHONPATH, keeping the user's own", () => {
    expect(erpEnvironment({ A: "1" })).toEqual(["A=1", `PYTHONPATH=${PYTHON_LAYER_SITE}`]);
    expect(erpEnvironment({ PYTHONPATH: "/mine" })).toEqual([`PYTHONPATH=${PYTHON_LAYER_SITE}:/mine`]);
  });
});
