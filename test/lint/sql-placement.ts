// "No SQL outside repositories": SQL of the control plane lives in `*.repo.ts` files and in
// src/db/ (pools, LISTEN, the job queue), nowhere else. Walks the syntax tree (comments and
// prose are not code) and reports, per file, what looks like SQL:
//   - a string or template literal that starts like a statement (`select … from`,
//     `insert into`, `update x set`, `delete from`, `with x as (`, DDL, LISTEN/NOTIFY) or
//     holds `on conflict` / `pg_notify(`; keywords count in lower or upper case, so an
//     English sentence ("Select a project from the list") is not SQL;
//   - a `.query(`, `.execute(` or `.transaction(` call, and drizzle's builders
//     (`db.select(`, `tx.insert(`, `deps.db.update(`, …) and `sql` tagged templates;
//   - a value imported from drizzle-orm.
// Usage: tsx test/lint/sql-placement.ts [--root DIR] [--src DIR]
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export interface Finding {
  file: string; // relative to the root, with /
  line: number;
  reason: string;
}

const STATEMENT =
  /^\s*(?:(?:select|SELECT)\b[\s\S]*\b(?:from|FROM)\b|(?:insert|INSERT)\s+(?:into|INTO)\b|(?:update|UPDATE)\s+[\w."]+\s+(?:set|SET)\b|(?:delete|DELETE)\s+(?:from|FROM)\b|(?:with|WITH)\s+\w+\s+(?:as|AS)\s*\(|(?:create|CREATE|alter|ALTER|drop|DROP)\s+(?:table|TABLE|index|INDEX|trigger|TRIGGER|function|FUNCTION)\b|(?:listen|LISTEN|unlisten|UNLISTEN|notify|NOTIFY)\s+[\w"*]|(?:truncate|TRUNCATE)\s+\w)/;
const ANYWHERE = /\b(?:on conflict|ON CONFLICT)\b|\bpg_notify\s*\(/;
const DB_CALLS = new Set(["query", "execute", "transaction"]);
const BUILDERS = new Set(["select", "selectDistinct", "insert", "update", "delete"]);
const DB_RECEIVERS = /^(?:db|tx|relaxedDb|database)$/;

/** Files whose SQL is in its right place. */
export function isAllowed(rel: string): boolean {
  return rel.endsWith(".repo.ts") || /(^|\/)src\/db\//.test(rel);
}

export function findSql(fileName: string, text: string): Omit<Finding, "file">[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const out: Omit<Finding, "file">[] = [];
  const at = (node: ts.Node, reason: string) => out.push({ line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, reason });

  function literalText(node: ts.Node): string | null {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isTemplateExpression(node)) return node.head.text + node.templateSpans.map((s) => ` $x ${s.literal.text}`).join("");
    return null;
  }
  function receiverName(expr: ts.Expression): string | null {
    if (ts.isIdentifier(expr)) return expr.text;
    if (ts.isPropertyAccessExpression(expr)) return expr.name.text;
    return null;
  }

  function visit(node: ts.Node): void {
    if (ts.isImportDeclaration(node)) {
      const from = (node.moduleSpecifier as ts.StringLiteral).text;
      const clause = node.importClause;
      if (/^drizzle-orm(\/|$)/.test(from) && clause && !clause.isTypeOnly) {
        const values = clause.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements.filter((e) => !e.isTypeOnly) : [];
        if (clause.name || values.length > 0 || (clause.namedBindings && ts.isNamespaceImport(clause.namedBindings))) at(node, `imports query building from ${from}`);
      }
      return;
    }
    const text = literalText(node);
    if (text !== null) {
      if (STATEMENT.test(text) || ANYWHERE.test(text)) at(node, `SQL in a literal: ${JSON.stringify(text.trim().slice(0, 40))}`);
      if (ts.isTemplateExpression(node)) ts.forEachChild(node, visit);
      return;
    }
    if (ts.isTaggedTemplateExpression(node) && ts.isIdentifier(node.tag) && node.tag.text === "sql") {
      at(node, "sql`…` template");
      return;
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const receiver = receiverName(node.expression.expression);
      if (DB_CALLS.has(method)) at(node, `.${method}() call`);
      else if (BUILDERS.has(method) && receiver && DB_RECEIVERS.test(receiver)) at(node, `drizzle ${receiver}.${method}()`);
    }
    ts.forEachChild(node, visit);
  }
  visit(sf);
  return out;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "node_modules") files.push(...sourceFiles(p));
    } else if (/\.ts$/.test(e.name) && !/\.test\.ts$|\.test-helpers\.ts$|\.d\.ts$/.test(e.name)) files.push(p);
  }
  return files;
}

export interface Report {
  findings: Finding[];
  /** Files holding SQL where it is not allowed. */
  misplaced: string[];
}

/** Checks every source file below `root`/`srcDir` (paths in the report are relative to root). */
export function check(root: string, srcDir: string): Report {
  const findings: Finding[] = [];
  for (const abs of sourceFiles(path.join(root, srcDir))) {
    const rel = path.relative(root, abs).split(path.sep).join("/");
    if (isAllowed(rel)) continue;
    for (const f of findSql(abs, readFileSync(abs, "utf8"))) findings.push({ file: rel, ...f });
  }
  return { findings, misplaced: [...new Set(findings.map((f) => f.file))].sort() };
}

const here = path.dirname(fileURLToPath(import.meta.url));
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const root = path.resolve(arg("--root") ?? path.join(here, "..", ".."));
  const srcDir = arg("--src") ?? "apps/control-plane/src";
  const report = check(root, srcDir);
  for (const file of report.misplaced) {
    for (const f of report.findings.filter((x) => x.file === file)) console.log(`${f.file}:${f.line}: ${f.reason}`);
  }
  if (report.misplaced.length) console.log(`\nSQL belongs in a *.repo.ts of the domain (or src/db/ for infrastructure): ${report.misplaced.length} file(s) above.`);
  const failed = report.misplaced.length > 0;
  console.log(failed ? "lint:sql failed" : "lint:sql: no SQL outside repositories");
  process.exit(failed ? 1 : 0);
}
