import { defineConfig } from "vitest/config";

// One run for every workspace. The global setup starts one PostgreSQL server (embedded,
// or DATABASE_URL) and a migrated template database; each test file clones its own.
export default defineConfig({
  test: {
    include: ["apps/**/*.test.ts", "packages/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    globalSetup: ["test/setup/global-setup.ts"],
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
