import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import { TIERS, type Tier } from "./test/tiers.ts";

// The suite in tiers a file's name or folder shows (test/tiers.ts, CONTRIBUTING.md "Tests").
// `npm test` runs every tier, one after another (sequence.groupOrder), each with its own
// worker count; `npm run test:quick` runs unit and api tests for what changed. The global
// setup starts one PostgreSQL server (embedded, or DATABASE_URL) and a migrated template
// database for the tiers that need it; each test file clones its own.
function project(tier: Tier, order: number): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name: tier.name,
      include: tier.include,
      exclude: ["**/node_modules/**", "**/dist/**", ...tier.exclude],
      globalSetup: tier.needsPostgres ? ["test/setup/global-setup.ts"] : [],
      // Building test:quick's impact map (test/quick/impact-map.ts): each file's coverage.
      setupFiles: tier.name === "api" && process.env.BERTH_IMPACT_MAP ? ["test/quick/take-coverage.ts"] : [],
      maxWorkers: tier.maxWorkers,
      isolate: tier.isolate,
      sequence: { groupOrder: order },
    },
  };
}

export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // expect.poll waits for what a user would wait for (a page's answer, a row written behind
    // a request). Vitest's 1 s default failed a sign-in error check in a loaded CI run; a
    // poll that passes returns as soon as it does, so a longer bound costs nothing then.
    expect: { poll: { timeout: 15_000 } },
    projects: TIERS.map(project),
  },
});
