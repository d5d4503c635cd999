// A push as GitHub delivers it to Berth's hook (platform spec 4.2): the demo project's
// repository, a branch, a fresh commit, signed with the project's hook secret.
import { createHmac, randomUUID } from "node:crypto";

/** The repository of createDemoOrganization's project, as GitHub names it in a push. */
export const DEMO_REPOSITORY = { full_name: "demo/erp-addons", clone_url: "https://git.example.com/demo/erp-addons.git", ssh_url: "git@git.example.com:demo/erp-addons.git" };

/** A 40-hex commit id never seen before. */
export const newCommit = () => createHmac("sha1", randomUUID()).digest("hex");

/** POSTs a signed push of `branch` to the control plane at `base`; its answer, delivery id and commit. */
export async function signedPush(base: string, secret: string, branch: string, opts: { delivery?: string; message?: string } = {}) {
  const commit = newCommit();
  const delivery = opts.delivery ?? randomUUID();
  const message = opts.message ?? "Work";
  const body = JSON.stringify({ ref: `refs/heads/${branch}`, after: commit, repository: DEMO_REPOSITORY, head_commit: { id: commit, message }, commits: [{ id: commit, message }] });
  const res = await fetch(`${base}/api/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": delivery,
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    },
    body,
  });
  return { status: res.status, body: await res.json(), delivery, commit };
}
