// Every operation of both OpenAPI documents that takes a body shows an example of it, and
// each example is a body its operation's schema accepts (so the explorers and generated
// clients never teach a request the API refuses).
import { Ajv } from "ajv";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REQUEST_EXAMPLES } from "../../apps/control-plane/src/public-api/request-examples.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

type Media = { schema: object; example?: unknown };
type Doc = { paths: Record<string, Record<string, { requestBody?: { content: Record<string, Media> } }>>; components?: { schemas?: Record<string, object> } };

/** Points the document's local refs at a schema registered under `id`. */
const rebase = (v: unknown, id: string): unknown =>
  Array.isArray(v)
    ? v.map((x) => rebase(x, id))
    : v && typeof v === "object"
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === "$ref" && typeof x === "string" && x.startsWith("#/") ? `${id}${x}` : rebase(x, id)]))
      : v;

for (const [api, url] of [
  ["public", "/api/public/v1/openapi.json"],
  ["platform", "/api/v1/openapi.json"],
] as const) {
  it(`shows a valid example body on every ${api} operation that takes one`, async () => {
    const doc = JSON.parse((await cp.app.inject({ method: "GET", url })).body) as Doc;
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: `${api}.json`, components: rebase(doc.components ?? {}, `${api}.json`) });
    const missing: string[] = [];
    const invalid: string[] = [];
    const checked: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const media = op.requestBody?.content["application/json"];
        if (!media) continue;
        const name = `${method.toUpperCase()} ${path}`;
        if (media.example === undefined) {
          missing.push(name);
          continue;
        }
        const validate = ajv.compile(rebase(media.schema, `${api}.json`) as object);
        if (!validate(media.example)) invalid.push(`${name}: ${ajv.errorsText(validate.errors)}`);
        checked.push(name);
      }
    }
    expect(missing, "request bodies without an example (add them to request-examples.ts)").toEqual([]);
    expect(invalid, "examples their own schema refuses").toEqual([]);
    // Every example in the table is shown: none is left for a route that is gone.
    expect(checked.sort()).toEqual(Object.keys(REQUEST_EXAMPLES[api]).sort());
  });
}
