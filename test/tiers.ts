// The suite's tiers, named once: vitest.config.ts makes a project of each, and
// `npm run test:quick` (test/quick/quick.ts) picks the API tests of a change by them.
//   unit     *.test.ts under apps/ and packages/: no PostgreSQL, no Docker
//   api      test/**/*.test.ts and *.api.test.ts: PostgreSQL and an in-process control plane
//   docker   *.docker.test.ts and *.e2e.test.ts: the Docker engine, real agent processes
//   browser  test/dashboard/: a real Chromium against a real control plane
//   system   test/{installers,images,drill,production}/: installers, image builds,
//            executables, the failover drill
export interface Tier {
  name: "unit" | "api" | "docker" | "browser" | "system";
  include: string[];
  exclude: string[];
  /** Worker processes at once: the machine has two cores; tiers that mostly wait may take more. */
  maxWorkers: number;
  needsPostgres: boolean;
  /**
   * Each file in a fresh module graph. The unit and API tiers share one per worker: importing
   * the modules again for each file was a quarter of the unit tier's time (75 s -> 58 s wall,
   * 107 s -> 67 s of CPU) and about 3.5 s of each API file. So a file of those tiers leaves no
   * process state behind: what a control plane reads at start is given to startControlPlane,
   * never set in process.env. The other tiers' files set the environment of the agents and
   * git processes they run, and keep their graphs apart.
   */
  isolate: boolean;
}

const DOCKER = ["**/*.docker.test.ts", "**/*.e2e.test.ts"];
const BROWSER = ["test/dashboard/**/*.test.ts"];
const SYSTEM = ["test/{installers,images,drill,production}/**/*.test.ts"];

/** In the order they run (`npm test` runs one tier after another). */
export const TIERS: Tier[] = [
  { name: "unit", include: ["apps/**/*.test.ts", "packages/**/*.test.ts"], exclude: [...DOCKER, "**/*.api.test.ts"], maxWorkers: 2, needsPostgres: false, isolate: false },
  { name: "api", include: ["test/**/*.test.ts", "**/*.api.test.ts"], exclude: [...DOCKER, ...BROWSER, ...SYSTEM], maxWorkers: 2, needsPostgres: true, isolate: false },
  { name: "docker", include: DOCKER, exclude: [], maxWorkers: 2, needsPostgres: true, isolate: true },
  { name: "browser", include: BROWSER, exclude: [], maxWorkers: 2, needsPostgres: true, isolate: true },
  { name: "system", include: SYSTEM, exclude: [], maxWorkers: 2, needsPostgres: true, isolate: true },
];
