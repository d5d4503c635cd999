// Loaded into every API test file while the impact map is built (impact-map.ts sets
// BERTH_IMPACT_MAP): when the file's tests are done, V8's coverage since the last take is
// written out and its counters reset, so each dump holds one test file's run even when
// vitest runs several files in one process, and a process ended by a signal loses nothing.
import { takeCoverage } from "node:v8";
import { afterAll } from "vitest";

afterAll(() => {
  takeCoverage();
});
