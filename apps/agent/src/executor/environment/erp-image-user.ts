// The user an ERP image runs as (uid and gid), read from the image itself, never assumed:
// Odoo's official images disagree (16.0 and 17.0: `odoo` is uid 101 / gid 101; 18.0 and
// 19.0, on Ubuntu noble: uid 100 / gid 101, odoo/odoo issue 183106), and a file Odoo must
// read (odoo.conf at 0600) owned by another uid is silently ignored: the entrypoint falls
// back to host `db` and the deploy fails after 30 s (ERP-FACTS "Real Odoo").
//
// A one-off container of the image runs `id` as the image's USER, without its entrypoint and
// without network; the answer is kept per image id (an id names its content, so the answer
// never changes), so each image is probed once per agent process: deploys of one image that
// start together wait on the same probe (a failed probe is not kept).
import { randomBytes } from "node:crypto";
import { lchown, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { DockerClient } from "../../docker/docker-client.ts";
import { MANAGED_LABELS, ROLE_LABEL } from "../../docker/labels.ts";
import { CommandError } from "../runner/handler-types.ts";

export interface ErpUser {
  uid: number;
  gid: number;
}

const PROBE_DEADLINE_MS = 60_000;
const known = new Map<string, Promise<ErpUser>>();

/** The uid and gid `image` runs as; the image must be present locally. */
export async function erpUserOf(docker: DockerClient, image: string): Promise<ErpUser> {
  const id = await docker.imageId(image);
  if (id === null) throw new CommandError("image_unavailable", `image ${image} is not present on this server`);
  let user = known.get(id);
  if (user === undefined) {
    user = probe(docker, image, id);
    known.set(id, user);
    user.catch(() => known.delete(id));
  }
  return user;
}

async function probe(docker: DockerClient, image: string, id: string): Promise<ErpUser> {
  const run = await docker.runToCompletion(
    {
      name: `berth-image-user-${randomBytes(4).toString("hex")}`,
      image: id,
      labels: { ...MANAGED_LABELS, [ROLE_LABEL]: "image-probe" },
      entrypoint: ["id"],
      cmd: [],
      network: "none",
    },
    { deadlineMs: PROBE_DEADLINE_MS, tailLines: 5 },
  );
  const user = run.exitCode === 0 ? parseId(run.tail.join("\n")) : null;
  if (user === null) {
    throw new CommandError(
      "image_user_unknown",
      `could not tell which user image ${image} runs as (\`id\` in the image ${run.killed ? "did not answer" : `exited ${run.exitCode}`}: ${run.tail.slice(-3).join(" ").trim() || "no output"})`,
    );
  }
  return user;
}

/** `id`'s answer: "uid=100(odoo) gid=101(odoo) groups=101(odoo)". */
export function parseId(output: string): ErpUser | null {
  const match = /uid=(\d+)\S*\s+gid=(\d+)/.exec(output);
  return match === null ? null : { uid: Number(match[1]), gid: Number(match[2]) };
}

/** The user of the image a container was created from (the previous ERP, a restore's ERP). */
export async function erpUserOfContainer(docker: DockerClient, containerId: string): Promise<ErpUser | null> {
  const details = await docker.inspectContainer(containerId);
  return details === null ? null : erpUserOf(docker, details.imageId);
}

/**
 * Hands `dir` to the image's user. When it belonged to another uid (a new image whose user
 * differs: 17.0's 101, 18.0's 100) the whole tree is handed over, since the ERP must write
 * what it wrote before. False without root (EPERM).
 */
export async function giveTree(dir: string, user: ErpUser, log: (message: string) => void): Promise<boolean> {
  const owner = await stat(dir);
  if (owner.uid === user.uid && owner.gid === user.gid) return true;
  try {
    await chownTree(dir, user);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
    return false;
  }
  if (owner.uid !== process.getuid?.()) log(`${dir}: handed from uid ${owner.uid} to the image's user (uid ${user.uid}, gid ${user.gid})`);
  return true;
}

export async function chownTree(path: string, user: ErpUser): Promise<void> {
  await lchown(path, user.uid, user.gid);
  for (const entry of await readdir(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) await chownTree(child, user);
    else await lchown(child, user.uid, user.gid);
  }
}
