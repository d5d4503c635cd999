// Both OpenAPI documents name every operation (operationId), as a generated client needs:
// each name unique within its document, camelCase, and every name in the table in use.
import { afterAll, beforeAll, expect, it } from "vitest";
import { OPERATION_IDS } from "../../apps/control-plane/src/public-api/operation-ids.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

type Doc = { paths: Record<string, Record<string, { operationId?: string }>> };

for (const [api, url] of [
  ["public", "/api/public/v1/openapi.json"],
  ["platform", "/api/v1/openapi.json"],
] as const) {
  it(`names every operation of the ${api} API once, with the names of the table`, async () => {
    const doc = JSON.parse((await cp.app.inject({ method: "GET", url })).body) as Doc;
    const named = new Map<string, string>();
    const unnamed: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const key = `${method.toUpperCase()} ${path}`;
        if (op.operationId === undefined) unnamed.push(key);
        else named.set(key, op.operationId);
      }
    }
    expect(unnamed, "operations without an operationId (add them to operation-ids.ts)").toEqual([]);
    const names = [...named.values()];
    expect(names.filter((n, i) => names.indexOf(n) !== i), "operationIds used twice").toEqual([]);
    for (const name of names) expect(name).toMatch(/^[a-z][A-Za-z0-9]+$/);
    // The table names what the document has: a renamed or removed route leaves no stale name.
    expect(Object.fromEntries(named)).toEqual(OPERATION_IDS[api]);
  });
}
