// The SQL-placement check (`npm run lint:sql`): SQL outside a repository or src/db fails,
// prose and comments do not.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check, findSql } from "./sql-placement.ts";

const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures", "sql");
const SRC = "apps/control-plane/src";
const file = (name: string) => `${SRC}/modules/shop/${name}`;

describe("SQL placement", () => {
  it("finds SQL in a route file, with the line of each statement, query call and query builder", () => {
    const report = check(fixture, SRC);
    expect(report.findings.filter((f) => f.file === file("shop.routes.ts")).map((f) => `${f.line} ${f.reason.split(":")[0]}`)).toEqual([
      "2 imports query building from drizzle-orm",
      "5 .query() call",
      "5 SQL in a literal",
      "9 drizzle db.select()",
    ]);
  });

  it("finds a NOTIFY built in a template", () => {
    expect(check(fixture, SRC).findings.filter((f) => f.file === file("listener.ts"))).toHaveLength(1);
  });

  it("leaves repositories, src/db, prose, comments and a Map's delete alone", () => {
    const report = check(fixture, SRC);
    expect(report.misplaced).toEqual([file("listener.ts"), file("shop.routes.ts")]);
    expect(findSql("x.ts", 'const m = "Select a project from the list"; /* select * from t */ cache.delete(k);')).toEqual([]);
  });

  it("tells SQL apart in both cases of keyword", () => {
    expect(findSql("x.ts", 'pool.query("SELECT a FROM t")')).toHaveLength(2);
    expect(findSql("x.ts", 'const s = "delete from t where id = $1";')).toHaveLength(1);
    expect(findSql("x.ts", 'const s = "Update the settings then Delete from the list";')).toHaveLength(0);
  });
});
