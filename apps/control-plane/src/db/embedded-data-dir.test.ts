// Whether PostgreSQL can reach <BERTH_DATA_DIR>/postgres, on real folders.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { embeddedDataDirProblems } from "./embedded-data-dir.ts";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(mode: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-pgdir-"));
  chmodSync(dir, mode);
  made.push(dir);
  return dir;
}

describe("the embedded PostgreSQL's folder", () => {
  it.runIf(process.getuid?.() === 0)("as root: refuses a folder the user postgres cannot enter, and takes it once it can", () => {
    const dir = tempDir(0o700);
    const [problem, ...more] = embeddedDataDirProblems(path.join(dir, "data"));
    expect(more).toEqual([]);
    expect(problem).toContain(`cannot enter ${dir} (owner uid 0, mode 0700)`);
    expect(problem).toContain(`chmod o+x ${dir}`);
    chmodSync(dir, 0o711);
    expect(embeddedDataDirProblems(path.join(dir, "data"))).toEqual([]);
  });

  it("refuses a data directory that is a file", () => {
    const dir = tempDir(0o755);
    writeFileSync(path.join(dir, "data"), "");
    expect(embeddedDataDirProblems(path.join(dir, "data"))).toEqual([`BERTH_DATA_DIR: ${path.join(dir, "data", "postgres")} cannot be a folder, ${path.join(dir, "data")} is a file: set BERTH_DATA_DIR to a folder`]);
  });
});
