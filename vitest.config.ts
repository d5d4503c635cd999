import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

// The suite in tiers a file's name or folder shows (CONTRIBUTING.md, "Tests"):
//   unit     *.test.ts under apps/ and packages/: no PostgreSQL, no Docker
//   api      test/**/*.test.ts and *.api.test.ts: PostgreSQL and an in-process control plane
//   docker   *.docker.test.ts and *.e2e.test.ts: the Docker engine, real agent processes
//   browser  test/dashboard/: a real Chromium against a real control plane
//   system   test/{installers,images,drill,production}/: installers, image builds,
//            executables, the failover drill
// `npm test` runs every tier; `npm run test:quick` runs unit and api for what changed.
// Tiers run one after another (sequence.groupOrder), each with its own worker count. The
// global setup starts one PostgreSQL server (embedded, or DATABASE_URL) and a migrated
// template database for the tiers that need it; each test file clones its own.
const DOCKER = ["**/*.docker.test.ts", "**/*.e2e.test.ts"];
const BROWSER = ["test/dashboard/**/*.test.ts"];
const SYSTEM = ["test/{installers,images,drill,production}/**/*.test.ts"];
const PG_SETUP = ["test/setup/global-setup.ts"];

function tier(name: string, order: number, maxWorkers: number, include: string[], exclude: string[], needsPostgres: boolean): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name,
      include,
      exclude: ["**/node_modules/**", "**/dist/**", ...exclude],
      globalSetup: needsPostgres ? PG_SETUP : [],
      maxWorkers,
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
    projects: [
      tier("unit", 0, 2, ["apps/**/*.test.ts", "packages/**/*.test.ts"], [...DOCKER, "**/*.api.test.ts"], false),
      tier("api", 1, 2, ["test/**/*.test.ts", "**/*.api.test.ts"], [...DOCKER, ...BROWSER, ...SYSTEM], true),
      tier("docker", 2, 2, DOCKER, [], true),
      tier("browser", 3, 2, BROWSER, [], true),
      tier("system", 4, 2, SYSTEM, [], true),
    ],
  },
});
