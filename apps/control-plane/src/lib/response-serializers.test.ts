import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, expect, it } from "vitest";
import { distinctSchemaSerializers } from "./response-serializers.ts";

const Failure = {
  $id: "Failure",
  type: "object",
  properties: { error: { type: "string" }, when: { type: "string", format: "date-time" } },
  required: ["error"],
} as const;
const Thing = { type: "object", properties: { id: { type: "integer" }, name: { type: ["string", "null"] } }, required: ["id"] } as const;

let app: FastifyInstance | undefined;
afterEach(async () => app?.close());

/** An app of several plugin contexts (each compiles on its own, as the control plane's do), counting the serialisers built. */
async function appWithRoutes(buildSerializer: ReturnType<typeof distinctSchemaSerializers>) {
  const built = new Set<unknown>();
  const counting: typeof buildSerializer = (external, options) => {
    const compile = buildSerializer(external, options);
    return (route) => {
      const serialize = compile(route);
      built.add(serialize);
      return serialize;
    };
  };
  app = Fastify({ schemaController: { compilersFactory: { buildSerializer: counting } } });
  app.addSchema(Failure);
  for (const scope of ["a", "b", "c"]) {
    await app.register(async (plugin) => {
      // The shared schema itself as a response (fastify's default compiler then forgets it for the routes after)...
      plugin.get(`/${scope}/raw-failure`, { schema: { response: { 500: Failure } } }, async (_req, reply) => reply.code(500).send({ error: `raw ${scope}`, extra: "dropped" }));
      // ...and routes referring to it, with their own copies of the same 2xx schema.
      for (const n of [1, 2]) {
        plugin.get(`/${scope}/thing/${n}`, { schema: { response: { 200: structuredClone(Thing), 404: { $ref: "Failure#" } } } }, async (req, reply) =>
          n === 2 ? reply.code(404).send({ error: "not_found", when: new Date(Date.UTC(2026, 0, 2)) }) : { id: n, name: null, secret: "dropped" },
        );
      }
    });
  }
  await app.ready();
  return { app, built };
}

it("compiles each distinct response schema once across routes and plugin contexts, and every route still answers through its schema", async () => {
  const { app, built } = await appWithRoutes(distinctSchemaSerializers());
  // Three distinct schemas (Failure, Thing, the $ref to Failure) out of 3 contexts x 5 statuses.
  expect(built.size).toBe(3);
  for (const scope of ["a", "b", "c"]) {
    const raw = await app.inject({ url: `/${scope}/raw-failure` });
    expect(raw.statusCode).toBe(500);
    expect(raw.json()).toEqual({ error: `raw ${scope}` });
    const thing = await app.inject({ url: `/${scope}/thing/1` });
    expect(thing.json()).toEqual({ id: 1, name: null });
    // After a route whose response is the shared schema itself, references to it still resolve.
    const missing = await app.inject({ url: `/${scope}/thing/2` });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: "not_found", when: "2026-01-02T00:00:00.000Z" });
  }
});

it("does not share serialisers between apps whose shared schemas differ", async () => {
  const factory = distinctSchemaSerializers();
  const first = (await appWithRoutes(factory)).built;
  await app!.close();
  app = Fastify({ schemaController: { compilersFactory: { buildSerializer: factory } } });
  app.addSchema({ ...Failure, properties: { ...Failure.properties, code: { type: "integer" } } });
  app.get("/", { schema: { response: { 404: { $ref: "Failure#" } } } }, async (_req, reply) => reply.code(404).send({ error: "x", code: 7 }));
  await app.ready();
  expect((await app.inject({ url: "/" })).json()).toEqual({ error: "x", code: 7 });
  expect(first.size).toBe(3);
});
