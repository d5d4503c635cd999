// Schemas shared by every route: the error body, id parameters, and the pagination envelope.
import { Type, type TNull, type TSchema, type TUnion } from "typebox";
import { ERROR_STATUS } from "./error-codes.ts";

export { LiteralUnion } from "@berth/protocol";

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: "Stable machine-readable code, e.g. task_in_progress" }),
    message: Type.String({ description: "Human-readable explanation" }),
    retry_after: Type.Optional(Type.Integer({ description: "Seconds to wait (429 only)" })),
    request_id: Type.String({ description: "The request's id, as in the X-Request-Id response header: quote it when reporting a problem" }),
    details: Type.Optional(
      Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
        description: "Per-field problems (validation errors only)",
      }),
    ),
  },
  { $id: "Error", title: "Error" },
);

/**
 * A `$ref` to a schema the app registered by its `$id` (app.addSchema), so OpenAPI shows it
 * once under components; typed as the schema itself for the route's request and reply types.
 */
export function refTo<T extends TSchema>(schema: T): T {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== "string") throw new TypeError("refTo: the schema has no $id");
  return Type.Ref(id) as unknown as T;
}

export const Uuid = Type.String({ format: "uuid" });
export const Timestamp = Type.String({ format: "date-time" });
const PRIMITIVE_TYPES = new Set(["string", "integer", "number", "boolean", "array", "object"]);

/**
 * T or null. A schema of one plain `type` (no enum or const, which would need null listed
 * too) becomes that schema with `type: [its type, "null"]` (OpenAPI 3.1), anything else
 * `anyOf: [T, null]`. The type list is what the response serialiser (fast-json-stringify)
 * checks with a typeof; for anyOf it runs a schema validation per value and alternative
 * (a task costs 1.9 µs to serialise with anyOf, 0.5 µs with type lists, JSON.stringify 0.6).
 * Ajv also coerces a type list only when no listed type matches, so a null stays null.
 */
export const Nullable = <T extends TSchema>(t: T): TUnion<[T, TNull]> => {
  const type = (t as { type?: unknown }).type;
  const plain = typeof type === "string" && PRIMITIVE_TYPES.has(type) && !("enum" in t) && !("const" in t) && !("anyOf" in t) && !("$ref" in t);
  return (plain ? Type.Unsafe({ ...t, type: [type, "null"] }) : Type.Union([t, Type.Null()])) as unknown as TUnion<[T, TNull]>;
};

export const PageQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: "Page size, 1 to 100" }),
    cursor: Type.Optional(Type.String({ maxLength: 512, description: "pagination.next_cursor of the previous page" })),
  },
  { additionalProperties: false },
);

export const Page = <T extends TSchema>(item: T) =>
  Type.Object({
    data: Type.Array(item),
    pagination: Type.Object({
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String()),
      total: Type.Integer(),
    }),
  });

/**
 * Error responses a route can give, for the OpenAPI document and the serialiser: each status
 * refers to its own error body (Error404, …), whose `error` is an enum of the codes that
 * travel with that status, so a generated client knows them.
 */
export function errors(...statuses: number[]) {
  const out: Record<number, typeof ErrorBody> = {};
  // 503 database_unavailable can come from any route that reads or writes (error-handler.ts).
  for (const s of [400, 401, 403, 429, 503, ...statuses]) out[s] = errorBodyRef(s);
  return out;
}

/** The error body of one status as a reference (ErrorBody where no code has that status). */
export function errorBodyRef(status: number): typeof ErrorBody {
  return refTo(ERROR_BODIES.get(status) ?? ErrorBody);
}

export const IdParams = Type.Object({ id: Uuid });

/** A string enum that keeps its literal type and shows as `enum` in OpenAPI. */
export const StringEnum = <T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });

/** One error body per status of error-codes.ts, its `error` the codes of that status; app.ts registers them. */
export const ERROR_BODIES: ReadonlyMap<number, typeof ErrorBody> = new Map(
  [...new Set(Object.values(ERROR_STATUS))].sort().map((status) => {
    const codes = Object.entries(ERROR_STATUS).filter(([, s]) => s === status).map(([code]) => code);
    const body = Type.Object(
      { ...ErrorBody.properties, error: StringEnum(codes, { description: `Stable machine-readable code: one of the codes answered with ${status}` }) },
      { $id: `Error${status}`, title: `Error${status}` },
    );
    return [status, body as unknown as typeof ErrorBody];
  }),
);

