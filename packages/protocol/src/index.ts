export * from "./steps.ts";
