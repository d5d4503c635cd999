// pg's conversion of a parameter value to what Bind sends (no types of its own in @types/pg).
declare module "pg/lib/utils.js" {
  export function prepareValue(value: unknown): unknown;
}
