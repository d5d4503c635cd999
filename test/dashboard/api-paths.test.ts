// The dashboard calls the platform API through one openapi-fetch client (public/api.js), each
// call naming its path as the API documents it: `client.PATCH("/projects/{project_id}", …)`.
// This reads every such call in the dashboard's modules and fails when a method and path are
// not among the platform API's generated paths (packages/protocol/src/api-client/generated,
// itself checked against the served document by test/docs/api-client.test.ts), when a call's
// path is not written out, or when a module other than api.js reaches /api/v1 itself. No
// browser needed.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";

const PUBLIC_DIR = path.resolve(import.meta.dirname, "../../apps/control-plane/src/dashboard/public");
const GENERATED = path.resolve(import.meta.dirname, "../../packages/protocol/src/api-client/generated/platform-api.ts");

/** "GET /projects/{project_id}" for every operation of the platform API. */
function documentedOperations(): Set<string> {
  const source = readFileSync(GENERATED, "utf8");
  const body = source.slice(source.indexOf("export interface paths {"), source.indexOf("\nexport type webhooks"));
  const ops = new Set<string>();
  let current: string | null = null;
  for (const line of body.split("\n")) {
    const p = /^ {4}"(\/[^"]*)": \{$/.exec(line);
    if (p) current = p[1]!;
    const m = /^ {8}(get|put|post|delete|patch|head|options|trace): operations\[/.exec(line);
    if (m && current) ops.add(`${m[1]!.toUpperCase()} ${current}`);
  }
  return ops;
}

interface Call {
  file: string;
  line: number;
  method: string;
  /** The path when written as a string literal, else null. */
  path: string | null;
  arg: string;
}

function clientCalls(dir: string): Call[] {
  const calls: Call[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    const source = readFileSync(path.join(dir, file), "utf8");
    for (const m of source.matchAll(/\bclient\.(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS|TRACE)\(\s*([^,)]*)/g)) {
      const literal = /^"([^"]*)"$/.exec(m[2]!.trim());
      calls.push({ file, line: source.slice(0, m.index).split("\n").length, method: m[1]!, path: literal ? literal[1]! : null, arg: m[2]!.trim() });
    }
  }
  return calls;
}

/** Every problem of the dashboard's modules in `dir`, in words; none when all is well. */
function problems(dir: string): string[] {
  const documented = documentedOperations();
  const out: string[] = [];
  for (const c of clientCalls(dir)) {
    const where = `${c.file}:${c.line}`;
    if (c.path === null) {
      out.push(`${where}: client.${c.method}(${c.arg}, …) does not write its path out as a string`);
    } else if (!documented.has(`${c.method} ${c.path}`)) {
      out.push(`${where}: ${c.method} ${c.path} is not in the platform API`);
    }
  }
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    if (file === "api.js") continue;
    const source = readFileSync(path.join(dir, file), "utf8");
    if (/\bfetch\(\s*[`'"]\/api\/v1/.test(source)) out.push(`${file}: calls fetch("/api/v1…") itself instead of api.js's client`);
    else if (source.includes("/api/v1")) out.push(`${file}: names /api/v1 itself instead of calling api.js's client`);
  }
  return out;
}

const temps: string[] = [];
afterAll(() => {
  for (const t of temps) rmSync(t, { recursive: true, force: true });
});
/** A copy of the dashboard's modules with `file` changed by `edit`. */
function brokenCopy(file: string, edit: (source: string) => string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-dashboard-"));
  temps.push(dir);
  cpSync(PUBLIC_DIR, dir, { recursive: true });
  const target = path.join(dir, file);
  const before = readFileSync(target, "utf8");
  const after = edit(before);
  expect(after).not.toBe(before);
  writeFileSync(target, after);
  return dir;
}

it("reads the platform API's operations and the dashboard's calls", () => {
  const documented = documentedOperations();
  expect(documented.has("PATCH /projects/{project_id}/environments/{env_id}")).toBe(true);
  expect(documented.has("GET /organizations/{organization_id}/projects")).toBe(true);
  expect(documented.has("PATCH /organizations/{organization_id}/projects")).toBe(false);
  const calls = clientCalls(PUBLIC_DIR);
  expect(calls.length).toBeGreaterThan(60);
  // Every module that talks to the API does it through the client (bar the two above).
  const files = new Set(calls.map((c) => c.file));
  for (const f of ["app.js", "projects.js", "project-forms.js", "servers.js", "members.js", "settings.js", "migrations.js", "support.js", "backups.js", "variables.js", "backup-schedule.js", "invite.js"]) {
    expect(files, f).toContain(f);
  }
});

it("every path the dashboard calls is one the platform API documents, and only api.js reaches /api/v1", () => {
  expect(problems(PUBLIC_DIR)).toEqual([]);
});

it("fails on a path or a method the API does not have, a path not written out, and a fetch of its own", () => {
  const wrongPath = brokenCopy("project-forms.js", (s) => s.replace('"/projects/{project_id}/environments/{env_id}"', '"/projects/{project_id}/environment/{env_id}"'));
  expect(problems(wrongPath)).toEqual([expect.stringMatching(/^project-forms\.js:\d+: PATCH \/projects\/\{project_id\}\/environment\/\{env_id\} is not in the platform API$/)]);

  const wrongMethod = brokenCopy("project-forms.js", (s) => s.replace('client.PATCH("/projects/{project_id}",', 'client.PUT("/projects/{project_id}",'));
  expect(problems(wrongMethod)).toEqual([expect.stringMatching(/^project-forms\.js:\d+: PUT \/projects\/\{project_id\} is not in the platform API$/)]);

  const built = brokenCopy("members.js", (s) => s.replace('client.GET("/auth/sessions")', "client.GET(`/auth/${'sessions'}`)"));
  expect(problems(built)).toEqual([expect.stringMatching(/^members\.js:\d+: client\.GET\(`\/auth\/\$\{'sessions'\}`, …\) does not write its path out as a string$/)]);

  const own = brokenCopy("settings.js", (s) => `${s}\nexport const own = () => fetch("/api/v1/me");\n`);
  expect(problems(own)).toEqual(['settings.js: calls fetch("/api/v1…") itself instead of api.js\'s client']);
});
