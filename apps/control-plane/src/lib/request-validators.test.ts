import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { validatorsOnFirstUse } from "./request-validators.ts";

/** The same route on Fastify's own validators and on ours: what a client sees must not differ. */
async function answers(buildValidator?: ReturnType<typeof validatorsOnFirstUse>) {
  const app = Fastify({ ...(buildValidator ? { schemaController: { compilersFactory: { buildValidator } } } : {}) });
  app.post(
    "/things/:id",
    {
      schema: {
        params: { type: "object", properties: { id: { type: "string", pattern: "^[a-z]+$" } }, required: ["id"] },
        // Written with capitals, as HTTP documents name headers; requests arrive lower-cased.
        headers: { type: "object", properties: { "X-Confirm": { type: "string", enum: ["yes"] } }, required: ["X-Confirm"] },
        body: { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"], additionalProperties: false },
      },
    },
    async (req) => ({ ok: true, body: req.body }),
  );
  const call = async (url: string, headers: Record<string, string>, body: unknown) => {
    const res = await app.inject({ method: "POST", url, headers: { "content-type": "application/json", ...headers }, payload: JSON.stringify(body) });
    return { status: res.statusCode, body: res.json() };
  };
  const seen = [
    await call("/things/abc", { "x-confirm": "yes" }, { n: 2 }),
    await call("/things/abc", { "X-Confirm": "yes" }, { n: 2 }),
    await call("/things/abc", {}, { n: 2 }),
    await call("/things/abc", { "x-confirm": "no" }, { n: 2 }),
    await call("/things/ABC", { "x-confirm": "yes" }, { n: 2 }),
    await call("/things/abc", { "x-confirm": "yes" }, { n: 0 }),
    // Fastify's default Ajv options drop what the schema does not name.
    await call("/things/abc", { "x-confirm": "yes" }, { n: 1, extra: true }),
    // Twice: the second call uses the validator the first compiled.
    await call("/things/abc", { "x-confirm": "yes" }, { n: 0 }),
  ];
  await app.close();
  return seen;
}

describe("request validators compiled on first use", () => {
  it("accept and refuse exactly what Fastify's own validators do, with the same messages", async () => {
    const ours = await answers(validatorsOnFirstUse());
    expect(ours).toEqual(await answers());
    expect(ours.map((a) => a.status)).toEqual([200, 200, 400, 400, 400, 400, 200, 400]);
    expect(ours[6]!.body.body).toEqual({ n: 1 });
    expect(ours[2]!.body.message).toBe("headers must have required property 'x-confirm'");
    expect(ours[5]!.body.message).toBe("body/n must be >= 1");
  });
});
