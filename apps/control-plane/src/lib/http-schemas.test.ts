// Nullable's two shapes: a type list where the serialiser and Ajv can check a typeof, anyOf
// where null would have to be listed too (enums, consts) or cannot be (refs, unions).
import Ajv from "ajv";
import fastJson from "fast-json-stringify";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import { Nullable, StringEnum, Timestamp } from "./http-schemas.ts";

describe("Nullable", () => {
  it("gives a plain type a type list, and an enum anyOf with null", () => {
    expect(JSON.parse(JSON.stringify(Nullable(Timestamp)))).toEqual({ type: ["string", "null"], format: "date-time" });
    expect(JSON.parse(JSON.stringify(Nullable(Type.Integer({ minimum: 0 }))))).toEqual({ type: ["integer", "null"], minimum: 0 });
    const status = Nullable(StringEnum(["a", "b"]));
    expect(status).toHaveProperty("anyOf");
    const ajv = new Ajv({ coerceTypes: "array", useDefaults: true });
    const check = ajv.compile(Type.Object({ status }));
    expect(check({ status: null })).toBe(true);
    expect(check({ status: "c" })).toBe(false);
  });

  it("keeps null as null and coerces other values as the app's Ajv does", () => {
    const ajv = new Ajv({ coerceTypes: "array", useDefaults: true, removeAdditional: false });
    const check = ajv.compile(Type.Object({ domain: Nullable(Type.String()), size: Nullable(Type.Integer()) }));
    const body: Record<string, unknown> = { domain: null, size: "4" };
    expect(check(body)).toBe(true);
    expect(body).toEqual({ domain: null, size: 4 });
  });

  it("serialises like JSON.stringify, nulls and values alike", () => {
    const schema = Type.Object({ at: Nullable(Timestamp), n: Nullable(Type.Integer()), list: Nullable(Type.Array(Type.String())), s: Nullable(StringEnum(["x"])) });
    const stringify = fastJson(schema);
    for (const value of [
      { at: null, n: null, list: null, s: null },
      { at: "2026-11-27T01:00:00.000Z", n: 3, list: ["a"], s: "x" },
    ]) expect(stringify(value)).toBe(JSON.stringify(value));
  });
});
