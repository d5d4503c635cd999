// Response serialisers: one per distinct response schema, not one per route and status.
//
// Fastify compiles a fast-json-stringify serialiser for every status of every route, in every
// plugin's context, and most of them are the same few error bodies (http-schemas.ts errors()):
// 1,493 compiles of 163 distinct schemas. Besides the start-up time, each compile
// leaves objects whose first property has a name of its own (fast-json-stringify's
// `__fjs_root_<n>`), and V8 keeps one hidden-class transition per such name on the map every
// `{}` literal starts from. Past about 1,500 that map takes no more transitions: until the
// next full garbage collection, every object built key by key from `{}` (each reply's and
// each request's headers) then gets hidden classes of its own, a few new maps per request
// and property reads that miss every inline cache (perf, right after start: ~5 us of new maps
// per task read). Compiling each distinct schema once keeps the process clear of it (1,130
// transitions at ready instead of 1,536) and halves ready() (~580 ms instead of ~1,350).
import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Compiler = ReturnType<SerializerFactory>;

/**
 * Fastify's default serialiser factory (schemaController.compilersFactory.buildSerializer),
 * compiling each distinct response schema (by its JSON) once per set of shared schemas. Every
 * plugin context calls the factory with its own copy of the shared schemas: the set is the
 * same when its schema objects are. `onFirstUse`: each is compiled by the first reply that
 * needs it (request-validators.ts says why).
 */
export function distinctSchemaSerializers(opts: { onFirstUse?: boolean } = {}): SerializerFactory {
  const compileFor = SerializerSelector();
  const identities = new WeakMap<object, number>();
  let named = 0;
  const identity = (o: object): number => {
    let id = identities.get(o);
    if (id === undefined) identities.set(o, (id = ++named));
    return id;
  };
  // Shared-schema set (and options) -> what was compiled with it.
  const sets = new Map<string, Map<string, ReturnType<Compiler>>>();

  return (externalSchemas, options) => {
    const shared = Object.entries((externalSchemas ?? {}) as Record<string, object>);
    const setKey = `${options ? identity(options) : 0}|${shared.map(([id, schema]) => `${id}=${identity(schema)}`).join(",")}`;
    let compiled = sets.get(setKey);
    if (compiled === undefined) sets.set(setKey, (compiled = new Map()));
    return (route) => {
      const compile = () => {
        // A serialiser depends on its schema and the shared schemas alone, never on the route.
        const key = JSON.stringify(route.schema);
        let serialize = compiled.get(key);
        // A compiler of its own each time: the default one drops a shared schema from its own
        // options for good once a route's schema is that schema (it would then be missing for the next).
        if (serialize === undefined) compiled.set(key, (serialize = compileFor(externalSchemas, options)(route)));
        return serialize;
      };
      if (!opts.onFirstUse) return compile();
      let serialize: ReturnType<Compiler> | undefined;
      return (data) => (serialize ??= compile())(data);
    };
  };
}
