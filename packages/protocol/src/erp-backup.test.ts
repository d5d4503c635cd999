import { describe, expect, it } from "vitest";
import { dumpMemberRank, normalizeMemberName, zipDumpMember } from "./erp-backup.ts";

describe("the dump of an ERP backup archive", () => {
  it("ranks Odoo's dump.sql first, then one folder down, then any other .sql or .dump", () => {
    expect(["dump.sql", "backup/dump.sql", "other.sql", "db.dump", "backup/other.sql"].map(dumpMemberRank)).toEqual([0, 1, 2, 2, 3]);
    for (const name of ["filestore/ab/x.sql", "a/b/dump.sql", "manifest.json", "dump.sql.gz", ""]) expect(dumpMemberRank(name), name).toBeNull();
  });

  it("picks a zip's best-ranked member whatever its place, and the earliest of equals", () => {
    expect(zipDumpMember(["extra.sql", "manifest.json", "dump.sql"])).toBe("dump.sql");
    expect(zipDumpMember(["x/other.sql", "x/dump.sql"])).toBe("x/dump.sql");
    expect(zipDumpMember(["b.sql", "a.sql"])).toBe("b.sql");
    expect(zipDumpMember(["manifest.json", "filestore/ab/cd"])).toBeNull();
  });

  it("compares names with forward slashes and without a leading ./", () => {
    expect(normalizeMemberName("./backup\\dump.sql")).toBe("backup/dump.sql");
  });
});
