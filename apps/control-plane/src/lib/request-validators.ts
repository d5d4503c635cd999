// Request validators compiled when a route is first called instead of when the app starts.
//
// Fastify compiles an Ajv validator for every body, query, params and headers schema of every
// route at start: about 1 s of CPU for Berth's routes, paid again by every control plane a test
// starts (hundreds per suite) although each test calls a handful of routes. The validators are
// the same ones, from the same Ajv pool, built on the first request that needs them.
// A server started by the `berth-control-plane` executable keeps compiling at start (app.ts
// `schemas`), so a schema Ajv cannot compile still stops it before it serves.
import AjvCompiler, { type BuildCompilerFromPool } from "@fastify/ajv-compiler";
import type { FastifySchemaCompiler } from "fastify";

type RouteSchema = Parameters<FastifySchemaCompiler<unknown>>[0];
type Validate = ReturnType<FastifySchemaCompiler<unknown>>;

/** What the pool does at run time: ajv-compiler's types give the compiler Ajv's own signature, not Fastify's. */
type ValidatorFactory = (externalSchemas: unknown, options?: unknown) => FastifySchemaCompiler<unknown>;

/**
 * Fastify lower-cases a headers schema's property names for its own compiler only, since
 * request headers arrive lower-cased (validation.js compileSchemasForValidation); a factory of
 * ours is "custom" to it, so the same is done here.
 */
function lowerCaseHeaders(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Object.getPrototypeOf(schema) !== Object.prototype) return schema;
  const s = schema as { properties?: Record<string, unknown>; required?: string[] };
  return {
    ...s,
    ...(s.properties ? { properties: Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k.toLowerCase(), v])) } : {}),
    ...(s.required ? { required: s.required.map((k) => k.toLowerCase()) } : {}),
  };
}

/** Fastify's default validator factory (schemaController.compilersFactory.buildValidator), compiling on first use. */
export function validatorsOnFirstUse(): BuildCompilerFromPool {
  const pool = AjvCompiler() as unknown as ValidatorFactory;
  const factory: ValidatorFactory = (externalSchemas, options) => {
    let compilerOfContext: FastifySchemaCompiler<unknown> | undefined;
    return (route: RouteSchema) => {
      const definition = route.httpPart === "headers" ? { ...route, schema: lowerCaseHeaders(route.schema) } : route;
      let validate: Validate | undefined;
      const validateOnFirstUse: Validate = (data: unknown) => {
        validate ??= (compilerOfContext ??= pool(externalSchemas, options))(definition);
        const result = validate(data);
        // Fastify reads a failed validation's reasons from the function it was given.
        validateOnFirstUse.errors = validate.errors;
        return result;
      };
      return validateOnFirstUse;
    };
  };
  return factory as unknown as BuildCompilerFromPool;
}
