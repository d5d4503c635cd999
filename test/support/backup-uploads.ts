// What an agent does with a backup's files before it reports the backup done: each is PUT to
// the control plane's backup store at the signed backup command's upload path, with its
// token and SHA-256 (apps/agent/src/executor/backup/backup-transfer.ts). For tests whose
// simulated agent answers backup commands.
import { createHash } from "node:crypto";
import type { SignedCommand } from "@berth/protocol";

export interface BackupFileContent {
  name: string;
  body: Buffer;
}

/** Small stand-ins for a backup's two files. */
export const SAMPLE_BACKUP_FILES: BackupFileContent[] = [
  { name: "db.dump", body: Buffer.alloc(2048, 0x61) },
  { name: "filestore.tar.gz", body: Buffer.alloc(4096, 0x62) },
];

/** Uploads the files (when the command asks for it); returns them as the agent's result lists them. */
export async function uploadBackupFiles(baseUrl: string, cmd: SignedCommand, contents: BackupFileContent[] = SAMPLE_BACKUP_FILES) {
  const files = contents.map((c) => ({ name: c.name, size: c.body.length, sha256: createHash("sha256").update(c.body).digest("hex") }));
  const upload = (cmd.params as { upload?: { path: string; token: string } }).upload;
  if (upload) {
    for (const [i, c] of contents.entries()) {
      const res = await fetch(`${baseUrl}${upload.path}/${c.name}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${upload.token}`, "content-type": "application/octet-stream", "x-checksum-sha256": files[i]!.sha256 },
        body: new Uint8Array(c.body),
      });
      if (res.status !== 200) throw new Error(`the upload of ${c.name} was answered ${res.status}: ${await res.text()}`);
    }
  }
  return files;
}
