// Python requirements of the add-ons (requirements.txt at a repository's root) go into a
// virtual environment in the environment's folder on this server, mounted into the ERP's
// containers: it survives container restarts and replacements, and it works on images that
// refuse `pip install --user` (PEP 668 "externally managed" Pythons, as Ubuntu noble's in
// Odoo 18/19 images). The venv is made from the image's own python3 with
// --system-site-packages (the ERP's libraries stay visible), without pip when the image has
// no ensurepip (pip then runs from the system with --python). Its site-packages is reached
// through a fixed link, <mount>/site, which PYTHONPATH names, so the ERP's own interpreter
// finds the packages whatever its Python version; a missing link is ignored by Python.
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { DockerClient } from "../../docker/docker-client.ts";
import { giveTree, type ErpUser } from "../environment/erp-image-user.ts";

/** Where the layer is mounted in the ERP's containers. */
export const PYTHON_LAYER_MOUNT = "/opt/berth-python";
export const PYTHON_LAYER_SITE = `${PYTHON_LAYER_MOUNT}/site`;

/** The layer's folder on this server (inside the environment's folder). */
export function pythonLayerDir(environmentDir: string): string {
  return join(environmentDir, "python");
}

/** The bind of the layer: read-only for the ERP, writable for the install run. */
export function pythonLayerBind(environmentDir: string, writable = false): string {
  return `${pythonLayerDir(environmentDir)}:${PYTHON_LAYER_MOUNT}${writable ? "" : ":ro"}`;
}

/** The ERP's environment: the deploy's variables, with the layer first on PYTHONPATH. */
export function erpEnvironment(env: Record<string, string>): string[] {
  const own = env.PYTHONPATH;
  const merged = { ...env, PYTHONPATH: own ? `${PYTHON_LAYER_SITE}:${own}` : PYTHON_LAYER_SITE };
  return Object.entries(merged).map(([name, value]) => `${name}=${value}`);
}

/** Creates the layer's folder, owned (with what it holds) by the image's user when the agent may give it away. */
export async function preparePythonLayer(environmentDir: string, user: ErpUser, log: (message: string) => void): Promise<string> {
  const dir = pythonLayerDir(environmentDir);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  // Without root the ERP's user must still write it (inside the agent's private state dir).
  if (!(await giveTree(dir, user, log))) await chmod(dir, 0o777);
  return dir;
}

/**
 * A fixed script (no interpolation: the layer's path is $1, the requirement files follow)
 * run by `sh -c` in a one-off container of the deploy's image. Exit 127: no python3.
 */
export const INSTALL_SCRIPT = `set -eu
layer="$1"; shift
venv="$layer/venv"
command -v python3 >/dev/null 2>&1 || { echo "berth: the image has no python3" >&2; exit 127; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --system-site-packages "$venv" 2>/dev/null || { rm -rf "$venv"; python3 -m venv --system-site-packages --without-pip "$venv"; }
fi
for f in "$@"; do set -- "$@" -r "$f"; shift; done
if "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install --no-cache-dir --disable-pip-version-check "$@"
else
  python3 -m pip --python "$venv/bin/python" install --no-cache-dir --disable-pip-version-check "$@"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
ln -sfn "$site" "$layer/site"
echo "berth: requirements installed into $site"
`;

/** The one-off container's command. */
export function installCommand(requirementFiles: string[]): string[] {
  return ["sh", "-c", INSTALL_SCRIPT, "berth-python-layer", PYTHON_LAYER_MOUNT, ...requirementFiles];
}

export interface LayerInstall {
  /** True when the layer holds the requirements now. */
  installed: boolean;
  summary: string;
}

/**
 * Installs `files` into the layer in a one-off container of the deploy's image (the layer
 * mounted writable). A failure is logged and reported, not thrown: the ERP may still run.
 */
export async function installIntoLayer(
  docker: Pick<DockerClient, "runToCompletion">,
  spec: { name: string; image: string; user: ErpUser; labels: Record<string, string>; network: string; environmentDir: string; binds: string[]; files: string[] },
  options: { deadlineMs: number; signal: AbortSignal; log: (level: "info" | "warning", message: string) => void },
): Promise<LayerInstall> {
  await preparePythonLayer(spec.environmentDir, spec.user, (message) => options.log("info", message));
  options.log("info", `Installing ${spec.files.join(", ")} into the environment's Python layer (${PYTHON_LAYER_MOUNT}, a virtual environment that survives restarts)`);
  const result = await docker.runToCompletion(
    {
      name: spec.name,
      image: spec.image,
      labels: spec.labels,
      network: spec.network,
      cmd: installCommand(spec.files),
      binds: [...spec.binds, pythonLayerBind(spec.environmentDir, true)],
    },
    { deadlineMs: options.deadlineMs, signal: options.signal, tailLines: 20, onLine: (line) => line.trim() !== "" && options.log("info", `pip: ${line}`) },
  );
  if (result.exitCode === 0) return { installed: true, summary: `Requirements installed (${spec.files.length} file(s))` };
  const why = result.exitCode === 127 ? "the image has no python3" : result.killed ? "not done in time" : `exit code ${result.exitCode}`;
  options.log("warning", `The requirements were not installed (${why}), continuing (non-fatal): ${result.tail.slice(-5).join(" | ")}`);
  return { installed: false, summary: `Requirements not installed: ${why} (non-fatal)` };
}
