// The fuzzer: reads both OpenAPI documents from a running control plane, builds fast-check
// arbitraries for every operation's path parameters, query and body from their schemas
// (valid-ish values mixed with hostile ones and raw malformed bodies), sends the requests as
// tenant A through app.inject (the real Fastify pipeline: routing, hooks, auth, rate limits,
// validation, serialisation; no socket) and checks every answer: no 5xx, a documented status
// whose body validates against the documented schema, and nothing of tenant B's.
import { randomUUID } from "node:crypto";
import { Ajv, type ValidateFunction } from "ajv";
import fc from "fast-check";
import type { FuzzTarget } from "./start.ts";
import { KEY_KINDS, ROLES, type Tenant } from "./tenants.ts";

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export type ApiName = "public" | "platform";
export const APIS: Record<ApiName, { prefix: string; doc: string }> = {
  public: { prefix: "/api/public/v1", doc: "/api/public/v1/openapi.json" },
  platform: { prefix: "/api/v1", doc: "/api/v1/openapi.json" },
};

/**
 * Operations left out, with why. The SSE stream never ends (inject would wait forever); the
 * others would end the fuzzer's own sessions or memberships, after which it tests only 401s.
 */
const SKIPPED = new Set([
  "platform GET /events",
  "platform POST /auth/logout",
  "platform DELETE /auth/sessions/{id}",
  "platform DELETE /organizations/{organization_id}/members/{user_id}",
  "platform DELETE /organizations/{organization_id}/members/{user_id}/sessions",
  "platform DELETE /projects/{project_id}/members/{user_id}",
  "platform PUT /projects/{project_id}/members/{user_id}",
]);

interface Op {
  api: ApiName;
  method: string;
  path: string;
  key: string;
  op: Operation;
}

export interface FuzzRequest {
  api: ApiName;
  opKey: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  /** A JSON value, or raw text sent as is. */
  body?: { json: unknown } | { raw: string };
  /** B's resource ids placed in the path. */
  foreignInPath: boolean;
}

export interface Finding {
  kind: "server_error" | "invalid_response" | "leak";
  api: ApiName;
  operation: string;
  status: number;
  detail: string;
  method: string;
  url: string;
  body: string;
  response: string;
}

export interface ApiStats {
  requests: number;
  serverErrors: number;
  invalidResponses: number;
  leaks: number;
  durationMs: number;
  statuses: Record<string, number>;
}

export interface FuzzResult {
  stats: Record<ApiName, ApiStats>;
  findings: Finding[];
  durationMs: number;
}

// ---- Hostile values ---------------------------------------------------------------------------

const HOSTILE_STRINGS = [
  "../../etc/passwd",
  "..%2F..%2Fetc%2Fpasswd",
  "/etc/passwd\u0000.png",
  "' OR 1=1--",
  "'; drop table organizations; --",
  "\" OR \"\"=\"",
  "$(id)",
  "`id`",
  "; rm -rf / #",
  "| cat /etc/shadow",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff x \ud83d",
  "😀👩‍👩‍👧‍👦",
  "\u202Eevil\u202C",
  "ＡＢＣ",
  "%00",
  "%s%s%s%n",
  "{{7*7}}",
  "${jndi:ldap://x}",
  "<script>alert(1)</script>",
  "\r\nX-Injected: 1",
  "",
  " ",
  "null",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "12345678-1234-1234-1234-12345678901",
  "NaN",
  "-1",
  "1e309",
];
const HOSTILE_NUMBERS = [-1, 0, -0, 1.5, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];

function hostileString(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 70_000 }).map((n) => "x".repeat(n)) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 5_000 }).map((n) => "é😀\u0000".repeat(n)) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom("\ud800", "\udc00", "a", "\u0000", "'", "\"", "\\", "/"), maxLength: 20 }) },
  );
}

function wrongType(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.constantFrom(...HOSTILE_NUMBERS),
    hostileString(),
    fc.constant([]),
    fc.constant({}),
    fc.constant([["nested"]]),
    fc.constant({ $gt: "" }),
    fc.constant({ __proto__: { admin: true } } as unknown),
    fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}') as unknown),
  );
}

// ---- Schemas to arbitraries -------------------------------------------------------------------

export interface IdPools {
  own: string[];
  foreign: string[];
  users: string[];
}

class ArbBuilder {
  constructor(
    private readonly doc: Doc,
    private readonly ids: IdPools,
  ) {}

  private resolve(s: Schema): Schema {
    const ref = s.$ref;
    if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
      return this.resolve(this.doc.components?.schemas?.[ref.slice("#/components/schemas/".length)] ?? {});
    }
    return s;
  }

  /** A uuid from tenant A, tenant B, an account, or nobody. */
  id(): fc.Arbitrary<string> {
    const { own, foreign, users } = this.ids;
    return fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...own) },
      { weight: 3, arbitrary: fc.constantFrom(...foreign) },
      { weight: 1, arbitrary: fc.constantFrom(...users) },
      { weight: 1, arbitrary: fc.uuid() },
    );
  }

  /** Mostly what the schema asks for, sometimes something hostile. */
  value(s: Schema, name = "", depth = 0): fc.Arbitrary<unknown> {
    return fc.oneof({ weight: 6, arbitrary: this.valid(s, name, depth) }, { weight: 1, arbitrary: wrongType() });
  }

  valid(raw: Schema, name = "", depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(raw);
    const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (alts?.length) return fc.oneof(...alts.map((a) => this.valid(a, name, depth)));
    if (s.const !== undefined) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    const type = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string | undefined];
    const t = type.find((x) => x !== "null") ?? type[0];
    switch (t) {
      case "string":
        return this.string(s, name);
      case "integer":
      case "number": {
        const min = typeof s.minimum === "number" ? s.minimum : -10;
        const max = typeof s.maximum === "number" ? s.maximum : 10_000;
        return fc.oneof(fc.integer({ min: Math.ceil(min), max: Math.floor(max) }), fc.constantFrom(min, max));
      }
      case "boolean":
        return fc.boolean();
      case "null":
        return fc.constant(null);
      case "array":
        return fc.array(depth > 3 ? fc.constant("x") : this.value((s.items as Schema) ?? {}, name, depth + 1), { maxLength: 4 });
      case "object":
      case undefined: {
        if (!s.properties) return t === "object" ? fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }) : wrongType();
        return this.object(s, depth);
      }
      default:
        return wrongType();
    }
  }

  private string(s: Schema, name: string): fc.Arbitrary<string> {
    if (s.format === "uuid" || /(^|_)id$/.test(name)) return this.id();
    if (s.format === "date-time") return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4e12) }).map((d) => d.toISOString());
    if (s.format === "email" || name === "email") return fc.oneof(fc.emailAddress(), fc.constant(`fuzz-${randomUUID().slice(0, 8)}@example.test`));
    if (/url/.test(name)) return fc.constantFrom("https://hooks.example.com/x", "https://git.example.com/a/b.git", "https://user:token@git.example.com/r.git", "http://127.0.0.1/", "https://169.254.169.254/latest", "file:///etc/passwd");
    const minLength = typeof s.minLength === "number" ? s.minLength : 0;
    const maxLength = Math.min(typeof s.maxLength === "number" ? s.maxLength : 40, 64);
    const plain = fc.string({ minLength, maxLength: Math.max(minLength, maxLength) });
    if (typeof s.pattern === "string") {
      const matching = stringsMatching(new RegExp(s.pattern), minLength, typeof s.maxLength === "number" ? s.maxLength : Infinity);
      return matching ? fc.oneof(matching, plain) : plain;
    }
    return fc.oneof({ weight: 3, arbitrary: plain }, { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/) });
  }

  private object(s: Schema, depth: number): fc.Arbitrary<unknown> {
    const props = (s.properties ?? {}) as Record<string, Schema>;
    const required = new Set((s.required as string[] | undefined) ?? []);
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [k, v] of Object.entries(props)) model[k] = depth > 3 ? fc.constant(null) : this.value(v, k, depth + 1);
    const full = fc.record(model, { requiredKeys: Object.keys(model).filter((k) => required.has(k)) });
    return fc.oneof(
      { weight: 6, arbitrary: full },
      // Required fields missing.
      { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
      // An extra field.
      { weight: 1, arbitrary: fc.tuple(full, fc.constantFrom("extra", "organization_id", "is_portal_admin", "role", "__proto__"), wrongType()).map(([o, k, v]) => ({ ...(o as object), [k]: v })) },
    );
  }
}

const MALFORMED: { raw: string; type: string }[] = [
  { raw: "{", type: "application/json" },
  { raw: '{"name": "x",}', type: "application/json" },
  { raw: "", type: "application/json" },
  { raw: "null", type: "application/json" },
  { raw: "[]", type: "application/json" },
  { raw: '"just a string"', type: "application/json" },
  { raw: "12345678901234567890123456789", type: "application/json" },
  { raw: "\u0000\u0001\u0002", type: "application/json" },
  { raw: '{"a":"\\ud800"}', type: "application/json" },
  { raw: "[".repeat(5_000) + "]".repeat(5_000), type: "application/json" },
  { raw: '{"name": "x"}', type: "text/plain" },
  { raw: "name=x&server_id=1", type: "application/x-www-form-urlencoded" },
  { raw: "<xml/>", type: "application/xml" },
  { raw: '{"name": "x"}', type: "application/json; charset=latin1" },
  { raw: '{"name": "x"}', type: "" },
  { raw: "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b--", type: "multipart/form-data; boundary=b" },
];

// ---- Operations -------------------------------------------------------------------------------

export function operationsOf(api: ApiName, doc: Doc): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const key = `${method.toUpperCase()} ${path}`;
      if (SKIPPED.has(`${api} ${key}`)) continue;
      out.push({ api, method: method.toUpperCase(), path, key, op });
    }
  }
  return out;
}

function requestArb(op: Op, doc: Doc, ids: IdPools, foreign: Set<string>): fc.Arbitrary<FuzzRequest> {
  const b = new ArbBuilder(doc, ids);
  const params = op.op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === "path");
  const queryParams = params.filter((p) => p.in === "query");
  const headerParams = params.filter((p) => p.in === "header");
  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      fc.oneof({ weight: 8, arbitrary: b.valid(p.schema ?? {}, p.name) }, { weight: 2, arbitrary: hostileString() }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_NUMBERS) }),
    ),
  );
  const queryArb = fc.tuple(
    ...queryParams.map((p) => fc.option(fc.oneof({ weight: 4, arbitrary: b.valid(p.schema ?? {}, p.name) }, { weight: 1, arbitrary: hostileString() }), { nil: undefined, freq: 3 })),
  );
  const headerArb = fc.tuple(...headerParams.map((p) => fc.option(fc.oneof(b.valid(p.schema ?? {}, p.name), fc.constant("true"), hostileString()), { nil: undefined })));
  const bodySchema = op.op.requestBody?.content?.["application/json"]?.schema;
  const bodyArb: fc.Arbitrary<FuzzRequest["body"] | { raw: string; type: string }> = bodySchema
    ? fc.oneof(
        { weight: 8, arbitrary: b.valid(bodySchema).map((json) => ({ json })) },
        { weight: 1, arbitrary: wrongType().map((json) => ({ json })) },
        { weight: 2, arbitrary: fc.constantFrom(...MALFORMED) },
      )
    : fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...MALFORMED) }, { weight: 1, arbitrary: wrongType().map((json) => ({ json })) });
  const idempotency = fc.option(fc.oneof(fc.uuid(), hostileString()), { nil: undefined, freq: 4 });
  return fc.record({ path: pathArb, query: queryArb, headers: headerArb, body: bodyArb, idem: idempotency }).map(({ path, query, headers, body, idem }) => {
    let foreignInPath = false;
    let url = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const v = path[pathParams.findIndex((p) => p.name === name)];
      const text = typeof v === "string" ? v : JSON.stringify(v) ?? "";
      if (foreign.has(text)) foreignInPath = true;
      // Encoded, so a traversal stays inside its parameter instead of routing elsewhere; an empty
      // segment would route elsewhere too.
      return text === "" ? "%20" : encodeURIComponent(wellFormed(text));
    });
    const qs = new URLSearchParams();
    queryParams.forEach((p, i) => {
      const v = query[i];
      if (v !== undefined) qs.append(p.name, typeof v === "string" ? v : JSON.stringify(v));
    });
    const q = qs.toString();
    if (q) url += `?${q}`;
    const h: Record<string, string> = {};
    headerParams.forEach((p, i) => {
      const v = headers[i];
      if (v !== undefined) h[p.name] = headerSafe(String(v));
    });
    if (idem !== undefined) h["x-idempotency-key"] = headerSafe(idem);
    let sent: FuzzRequest["body"];
    if (body && "type" in body) {
      if (body.type) h["content-type"] = body.type;
      sent = { raw: body.raw };
    } else sent = body;
    return { api: op.api, opKey: op.key, method: op.method, url, headers: h, ...(sent ? { body: sent } : {}), foreignInPath };
  });
}

// ---- Response checks --------------------------------------------------------------------------

class ResponseChecker {
  private readonly ajv = new Ajv({ strict: false, allErrors: false, validateFormats: false });
  private readonly cache = new Map<string, ValidateFunction | null>();

  constructor(private readonly docs: Record<ApiName, Doc>) {
    for (const api of Object.keys(docs) as ApiName[]) {
      this.ajv.addSchema({ $id: `${api}.json`, components: docs[api].components ?? {} });
    }
  }

  private validator(api: ApiName, op: Operation, opKey: string, status: string): ValidateFunction | null {
    const key = `${api} ${opKey} ${status}`;
    if (!this.cache.has(key)) {
      const schema = op.responses?.[status]?.content?.["application/json"]?.schema;
      this.cache.set(key, schema ? this.ajv.compile(rebase(schema, `${api}.json`) as Schema) : null);
    }
    return this.cache.get(key)!;
  }

  /** Why the answer breaks the document, or null. */
  check(api: ApiName, op: Operation, opKey: string, status: number, contentType: string, body: string): string | null {
    const responses = op.responses ?? {};
    const documented = responses[String(status)] ? String(status) : responses[`${String(status)[0]}XX`] ? `${String(status)[0]}XX` : responses.default ? "default" : null;
    if (!documented) return `status ${status} is not documented (documented: ${Object.keys(responses).join(", ")})`;
    const validate = this.validator(api, op, opKey, documented);
    if (!validate) return null;
    if (!contentType.includes("json")) return `content-type ${contentType || "(none)"} where JSON is documented`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return "body is not JSON";
    }
    if (!validate(parsed)) return `body does not match the schema: ${this.ajv.errorsText(validate.errors, { dataVar: "body" })}`;
    return null;
  }
}

/** Points local component refs at the document's components schema. */
function rebase(schema: unknown, id: string): unknown {
  if (Array.isArray(schema)) return schema.map((s) => rebase(s, id));
  if (schema && typeof schema === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `${id}${v}` : rebase(v, id);
    return out;
  }
  return schema;
}

// ---- The run ----------------------------------------------------------------------------------

export interface FuzzOptions {
  requests: number;
  seed: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Requests between two moves of the clock past the rate-limit windows. */
  window?: number;
  onProgress?: (sent: number) => void;
}

export async function loadDocs(cp: FuzzTarget): Promise<Record<ApiName, Doc>> {
  const out = {} as Record<ApiName, Doc>;
  for (const api of Object.keys(APIS) as ApiName[]) {
    const res = await cp.app.inject({ method: "GET", url: APIS[api].doc });
    if (res.statusCode !== 200) throw new Error(`${APIS[api].doc}: ${res.statusCode}`);
    out[api] = JSON.parse(res.body) as Doc;
  }
  return out;
}

const excerpt = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

export async function fuzz(cp: FuzzTarget, a: Tenant, b: Tenant, opts: FuzzOptions): Promise<FuzzResult> {
  const docs = await loadDocs(cp);
  const checker = new ResponseChecker(docs);
  const foreign = new Set(b.ids);
  const ids: IdPools = { own: a.ids, foreign: b.ids, users: [...a.userIds, ...b.userIds] };
  const ops = (Object.keys(docs) as ApiName[]).flatMap((api) => operationsOf(api, docs[api]));
  const opByKey = new Map(ops.map((o) => [`${o.api} ${o.key}`, o]));
  const perOp = ops.map((o) => requestArb(o, docs[o.api], ids, foreign));
  const credential = fc.record({
    key: fc.constantFrom(...KEY_KINDS.flatMap((k) => a.keys[k])),
    session: fc.constantFrom(...ROLES.map((r) => a.sessions[r])),
    auth: fc.oneof({ weight: 30, arbitrary: fc.constant("ok") }, fc.constant("none"), fc.constant("garbage"), fc.constant("basic")),
  });
  const all = fc.tuple(fc.oneof(...perOp), credential).map(([req, c]) => {
    const token = req.api === "public" ? c.key : c.session;
    const auth =
      c.auth === "ok" ? `Bearer ${token}` : c.auth === "garbage" ? `Bearer ${token.slice(0, -3)}xyz` : c.auth === "basic" ? "Basic dXNlcjpwYXNz" : undefined;
    return { ...req, headers: { ...req.headers, ...(auth ? { authorization: auth } : {}) } };
  });

  const stats = {} as Record<ApiName, ApiStats>;
  for (const api of Object.keys(APIS) as ApiName[]) stats[api] = { requests: 0, serverErrors: 0, invalidResponses: 0, leaks: 0, durationMs: 0, statuses: {} };
  const findings = new Map<string, Finding>();
  /** The statuses of the answers given (not replayed) to each (API, credential, idempotency key). */
  const answersWithKey = new Map<string, Set<number>>();
  const windowSize = opts.window ?? 200;
  const concurrency = opts.concurrency ?? 16;
  const started = performance.now();

  const record = (kind: Finding["kind"], req: FuzzRequest, status: number, detail: string, response: string) => {
    const key = `${kind} ${req.api} ${req.opKey} ${status}`;
    if (findings.has(key)) return;
    const body = req.body === undefined ? "" : "raw" in req.body ? req.body.raw : JSON.stringify(req.body.json);
    findings.set(key, { kind, api: req.api, operation: req.opKey, status, detail, method: req.method, url: `${APIS[req.api].prefix}${req.url}`, body: excerpt(body ?? "", 200), response: excerpt(response) });
  };

  const one = async (req: FuzzRequest) => {
    const t0 = performance.now();
    const payload = req.body === undefined ? undefined : "raw" in req.body ? req.body.raw : JSON.stringify(req.body.json);
    const headers = { ...req.headers };
    if (req.body && "json" in req.body && !headers["content-type"]) headers["content-type"] = "application/json";
    const res = await cp.app.inject({ method: req.method as "GET", url: `${APIS[req.api].prefix}${req.url}`, headers, ...(payload !== undefined ? { payload } : {}) });
    const s = stats[req.api];
    s.durationMs += performance.now() - t0;
    s.requests++;
    s.statuses[res.statusCode] = (s.statuses[res.statusCode] ?? 0) + 1;
    if (res.statusCode >= 500) {
      s.serverErrors++;
      record("server_error", req, res.statusCode, "5xx", res.body);
    }
    // Public spec 4.4: a key sent again (even with another route or body) gets the answer of
    // the request that first held it, replayed. That answer was checked against its own route
    // when it came; a replay must carry the status of an answer given with that key (which
    // one is not known from outside: requests refused before the handler hold no key), and is
    // not judged against this route's schema.
    const idem = req.headers["x-idempotency-key"] ?? req.headers["idempotency-key"];
    const keyOf = idem === undefined ? undefined : `${req.api} ${req.headers.authorization ?? ""} ${idem}`;
    if (keyOf !== undefined && res.headers["x-idempotency-replayed"] === "true") {
      const given = answersWithKey.get(keyOf);
      if (given !== undefined && !given.has(res.statusCode)) {
        s.invalidResponses++;
        record("invalid_response", req, res.statusCode, `replayed with status ${res.statusCode}, never answered with this key (${[...given].join(", ")})`, res.body);
      }
      return;
    }
    if (keyOf !== undefined && req.method === "POST" && res.statusCode < 500) {
      const given = answersWithKey.get(keyOf) ?? new Set<number>();
      answersWithKey.set(keyOf, given.add(res.statusCode));
    }
    const op = opByKey.get(`${req.api} ${req.opKey}`)!;
    const invalid = checker.check(req.api, op.op, req.opKey, res.statusCode, String(res.headers["content-type"] ?? ""), res.body);
    if (invalid) {
      s.invalidResponses++;
      record("invalid_response", req, res.statusCode, invalid, res.body);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) {
      const sent = `${req.url} ${payload ?? ""}`;
      const leaked = b.secrets.find((x) => res.body.includes(x) && !sent.includes(x));
      if (leaked || req.foreignInPath) {
        s.leaks++;
        record("leak", req, res.statusCode, leaked ? `response holds tenant B's ${excerpt(leaked, 40)}` : "2xx on tenant B's id", res.body);
      }
    }
  };

  let sent = 0;
  for (let batch = 0; sent < opts.requests; batch++) {
    const n = Math.min(windowSize, opts.requests - sent);
    const reqs = fc.sample(all, { seed: opts.seed + batch, numRuns: n });
    // Past every rate-limit window (the longest is 60 s), so limits are hit within a batch, not forever.
    cp.clock.advance(61_000);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n) }, async () => {
        while (next < reqs.length) await one(reqs[next++]!);
      }),
    );
    sent += n;
    opts.onProgress?.(sent);
  }
  return { stats, findings: [...findings.values()], durationMs: performance.now() - started };
}

/** The readable table, the findings, then one JSON line of figures. */
export function report(result: FuzzResult, log: (line: string) => void): void {
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  log(`${"api".padEnd(10)}${pad("requests", 10)}${pad("5xx", 7)}${pad("invalid", 9)}${pad("leaks", 7)}${pad("req/s", 9)}  statuses`);
  for (const [api, s] of Object.entries(result.stats)) {
    const rps = s.requests / (result.durationMs / 1000);
    const statuses = Object.entries(s.statuses).map(([k, v]) => `${k}:${v}`).join(" ");
    log(`${api.padEnd(10)}${pad(s.requests, 10)}${pad(s.serverErrors, 7)}${pad(s.invalidResponses, 9)}${pad(s.leaks, 7)}${pad(rps.toFixed(0), 9)}  ${statuses}`);
  }
  if (result.findings.length) {
    log("");
    log(`findings (one per kind, operation and status; ${result.findings.length}):`);
    for (const f of result.findings.slice(0, 40)) {
      log(`- [${f.kind}] ${f.api} ${f.operation} -> ${f.status}: ${f.detail}`);
      log(`    ${f.method} ${f.url}`);
      if (f.body) log(`    body: ${f.body}`);
      log(`    response: ${f.response}`);
    }
  }
  const total = (k: keyof Omit<ApiStats, "statuses">) => Object.values(result.stats).reduce((n, s) => n + s[k], 0);
  const figures = {
    requests: total("requests"),
    server_errors: total("serverErrors"),
    invalid_responses: total("invalidResponses"),
    leaks: total("leaks"),
    duration_s: Number((result.durationMs / 1000).toFixed(1)),
    requests_per_s: Number((total("requests") / (result.durationMs / 1000)).toFixed(0)),
  };
  log(JSON.stringify(figures));
}

/** A header value carries printable ASCII only; anything else (CR, LF, controls, non-ASCII) becomes "?". */
function headerSafe(text: string): string {
  return text.replace(/[^ -~]/g, "?");
}

/**
 * Strings a schema's pattern accepts, within its lengths; undefined for a pattern fast-check
 * cannot generate from (lookahead and other assertions): such a field gets plain strings only.
 */
function stringsMatching(re: RegExp, minLength: number, maxLength: number): fc.Arbitrary<string> | undefined {
  try {
    return fc.stringMatching(re).filter((x) => x.length >= minLength && x.length <= maxLength);
  } catch {
    return undefined;
  }
}

/** Lone surrogates (which no URL can encode) become U+FFFD. */
function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}
