// The environment's files the ERP itself reads: its data dir, odoo.conf's ownership, and the
// passwords kept beside them (0600, never logged).
import { randomBytes } from "node:crypto";
import { chmod, chown, mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import type { EnvironmentLayout } from "../environment/environment-layout.ts";
import { giveTree, type ErpUser } from "../environment/erp-image-user.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { ADDON_REPOS_MOUNT, addonReposDir } from "./addon-repositories.ts";
import { pythonLayerBind } from "./python-layer.ts";

/** What the ERP's containers mount (the server and every one-off run of its image): configuration, data, code, Python layer. */
export function erpBinds(layout: EnvironmentLayout): string[] {
  return [
    `${layout.configFile}:/etc/odoo/odoo.conf:ro`,
    `${layout.dataDir}:/var/lib/odoo`,
    `${layout.addonsDir}:/mnt/extra-addons:ro`,
    `${addonReposDir(layout.dir)}:${ADDON_REPOS_MOUNT}:ro`,
    pythonLayerBind(layout.dir),
  ];
}

/** The ERP's master password when the control plane sends none: made once per environment, 0600, never logged. */
export async function adminPassword(layout: EnvironmentLayout): Promise<string> {
  const file = join(layout.dir, "admin-password");
  const stored = (await readFile(file, "utf8").catch(() => "")).trim();
  if (stored !== "") return stored;
  const password = randomBytes(24).toString("base64url");
  writeFileAtomic(file, `${password}\n`, SECRET_FILE_MODE);
  return password;
}

/** The environment's database password, as its PostgreSQL was created with. */
export async function readPassword(layout: EnvironmentLayout): Promise<string> {
  return (await readFile(layout.dbPasswordFile, "utf8")).trim();
}

/** The data dir belongs to the image's user, as /var/lib/odoo does in the official image. */
export async function prepareDataDir(dir: string, user: ErpUser, step: Pick<StepScope, "log">): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o750 });
  if (!(await giveTree(dir, user, (message) => step.log("info", message)))) {
    step.log("warning", `Cannot give ${dir} to the ERP's user (uid ${user.uid}) without root: the file store may not be writable`);
  }
}

/** odoo.conf holds the database password: owned by the image's user, 0600; world-readable only without root. */
export async function readableByErp(file: string, user: ErpUser, step: Pick<StepScope, "log">): Promise<void> {
  try {
    await chown(file, user.uid, user.gid);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
    await chmod(file, 0o644);
    step.log("warning", `Without root the agent cannot give ${file} to uid ${user.uid}: made it readable (0644) inside the private state dir`);
  }
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
