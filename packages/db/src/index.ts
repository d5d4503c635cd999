export * as schema from "./schema.ts";
export * from "./schema.ts";
export * from "./client.ts";
export * from "./migrate.ts";
export * from "./embedded.ts";
