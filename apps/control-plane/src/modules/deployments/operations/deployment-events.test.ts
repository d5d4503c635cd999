// What a backup's result means once its files were to go to the backup store.
import { describe, expect, it } from "vitest";
import { backupVerdict } from "./deployment-events.ts";

describe("a backup's verdict", () => {
  const sum = (name: string, size = 10, sha256 = "a".repeat(64)) => ({ name, size, sha256 });
  const ok = { ok: true, result: { files: [sum("db.dump")], stored: [sum("db.dump"), sum("manifest.json")] } };

  it("is the agent's when the files stay on the server", () => {
    expect(backupVerdict(ok, { storage: null, stored_files: [] })).toEqual({ ok: true });
    expect(backupVerdict({ ok: false, error: { code: "x", message: "boom" } }, { storage: "local", stored_files: [] })).toEqual({ ok: false, code: "x", message: "boom" });
  });

  it("succeeds only when every reported file arrived in the store with the same size and sha256", () => {
    expect(backupVerdict(ok, { storage: "local", stored_files: [sum("db.dump"), sum("manifest.json")] })).toEqual({ ok: true });
    const missing = backupVerdict(ok, { storage: "s3", stored_files: [sum("db.dump")] });
    expect(missing).toMatchObject({ ok: false, code: "backup_upload_incomplete", message: expect.stringMatching(/manifest\.json never arrived/) });
    const other = backupVerdict(ok, { storage: "local", stored_files: [sum("db.dump", 11), sum("manifest.json")] });
    expect(other).toMatchObject({ ok: false, message: expect.stringMatching(/db\.dump arrived as 11 bytes/) });
    expect(backupVerdict({ ok: true, result: {} }, { storage: "local", stored_files: [] })).toMatchObject({ ok: false, message: expect.stringMatching(/no file/) });
  });
});
