import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  // The barrel: it re-exports every table file under src/schema/, so drizzle-kit sees them all.
  schema: "./src/schema.ts",
  out: "./migrations",
});
