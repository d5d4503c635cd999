// `berth backups` against a real control plane whose server has a simulated agent that uploads
// the backup's files to the backup store, as an agent does: create (waiting for the end), list,
// download (the bytes on disk are the bytes the agent stored, checked by SHA-256) and restore
// (asked for, or --yes).
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { SAMPLE_BACKUP_FILES, uploadBackupFiles } from "../support/backup-uploads.ts";
import { json, signedInPerson, withApiKey } from "../support/cli-people.ts";
import { cliSuite } from "../support/cli-suite.ts";
import { runInTerminal } from "../support/cli-terminal.ts";

const s = cliSuite((cmd, agent) => {
  if (cmd.type !== "backup") return;
  void uploadBackupFiles(s.base, cmd).then((files) => agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { files } })]));
});

interface Backup {
  id: string;
  status: string;
  comment: string | null;
}

it("with an API key: a backup is made, listed and downloaded byte for byte", { timeout: 60_000 }, async () => {
  const run = withApiKey(s, s.d.api_keys.org_rw);
  const env = s.d.environments.running;
  const made = await json<Backup>(run, ["backups", "create", env, "--comment", "from the cli", "--wait"]);
  expect(made).toMatchObject({ status: "completed", comment: "from the cli" });
  expect((await json<Backup[]>(run, ["backups", "list", env])).map((b) => b.id)).toContain(made.id);

  const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-download-"));
  const r = await run(["backups", "download", env, made.id, "-o", dir]);
  expect(r.code, r.stderr).toBe(0);
  expect(readdirSync(dir).sort()).toEqual(SAMPLE_BACKUP_FILES.map((f) => f.name).sort());
  for (const f of SAMPLE_BACKUP_FILES) expect(readFileSync(path.join(dir, f.name)).equals(f.body)).toBe(true);

  // One file under a name of one's own; an existing file is not overwritten without --force.
  const one = path.join(dir, "acme.dump");
  const single = await json<{ files: { path: string; size_bytes: number }[] }>(run, ["backups", "download", env, made.id, "--file", "db.dump", "-o", one]);
  expect(single.files).toEqual([expect.objectContaining({ path: one, size_bytes: 2048 })]);
  expect(readFileSync(one).equals(SAMPLE_BACKUP_FILES[0]!.body)).toBe(true);
  const again = await run(["backups", "download", env, made.id, "-o", dir]);
  expect(again.code).toBe(2);
  expect(again.stderr).toContain("--force");
});

it("on a terminal, a download shows a progress line per file", { timeout: 60_000 }, async () => {
  const run = withApiKey(s, s.d.api_keys.org_rw);
  const env = s.d.environments.running;
  const made = await json<Backup>(run, ["backups", "create", env, "--wait"]);
  const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-download-tty-"));
  const r = await runInTerminal(["backups", "download", env, made.id, "-o", dir], { PATH: process.env.PATH ?? "", HOME: dir, BERTH_URL: s.base, BERTH_API_KEY: s.d.api_keys.org_rw });
  expect(r.code, r.stdout).toBe(0);
  expect(r.stdout).toContain("\rdb.dump  2.0 KB / 2.0 KB (100%)");
  expect(r.stdout).toContain("\rfilestore.tar.gz  4.0 KB / 4.0 KB (100%)");
});

// Last: the restore it starts stays queued (the simulated agent does not answer it), so the
// environment takes no other task afterwards.
it("with a session: a backup is made and restored, only with --yes when there is no terminal", { timeout: 60_000 }, async () => {
  const run = await signedInPerson(s);
  const env = s.d.environments.running;
  const made = await json<Backup>(run, ["backups", "create", env, "--wait"]);
  expect(made.status).toBe("completed");

  const refused = await run(["backups", "restore", env, made.id]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("--yes");

  const restored = await json<{ backup_id: string; deployment_id: string }>(run, ["backups", "restore", env, made.id, "--yes"]);
  expect(restored.backup_id).toBe(made.id);
  const { rows } = await s.cp.database.pool.query<{ kind: string }>("select kind from deployments where id = $1", [restored.deployment_id]);
  expect(rows[0]?.kind).toBe("restore");
});
