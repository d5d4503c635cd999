#!/usr/bin/env node
// `npx berth` in a checkout: the CLI from its sources with tsx when the development tools are
// installed, else from the build (dist/cli/bin.js). The single executable (npm run build:cli)
// does not go through here.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

const root = path.join(import.meta.dirname, "..");
let tsx;
try {
  tsx = createRequire(import.meta.url).resolve("tsx/cli");
} catch {
  tsx = undefined;
}
const built = path.join(root, "dist", "cli", "bin.js");
const argv = tsx !== undefined
  ? [tsx, path.join(root, "src", "cli", "bin.ts"), ...process.argv.slice(2)]
  : ["--conditions=berth-dist", built, ...process.argv.slice(2)];
if (tsx === undefined && !existsSync(built)) {
  process.stderr.write(`${built} is missing: run \`npm run build\` first\n`);
  process.exit(1);
}
const child = spawnSync(process.execPath, argv, { stdio: "inherit" });
if (child.error) throw child.error;
if (child.signal) process.kill(process.pid, child.signal);
process.exit(child.status ?? 1);
