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
    // expect.poll waits for what a user would wait for (a page's answer, a row written behind
    // a request). Vitest's 1 s default failed a sign-in error check in a loaded CI run; a
    // poll that passes returns as soon as it does, so a longer bound costs nothing then.
    expect: { poll: { timeout: 15_000 } },
  },
});
