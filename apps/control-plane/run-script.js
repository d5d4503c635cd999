// `npm run seed:demo | admin:create | erp-images`: runs src/scripts/<name>.ts with tsx where
// the development tools are installed (a checkout after `npm ci`: the sources, as before), or
// dist/scripts/<name>.js, the build, where they are not (`npm ci --omit=dev` after
// `npm run build`, the container image). The build's imports of @berth/db and
// @berth/protocol resolve to their builds under the `berth-dist` export condition.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

const [name, ...args] = process.argv.slice(2);
if (!name || !/^[a-z-]+$/.test(name)) {
  process.stderr.write("usage: node run-script.js <script name> [arguments]\n");
  process.exit(2);
}

function tsxCli() {
  try {
    return createRequire(import.meta.url).resolve("tsx/cli");
  } catch {
    return undefined;
  }
}

const tsx = tsxCli();
const built = path.join(import.meta.dirname, "dist", "scripts", `${name}.js`);
let argv;
if (tsx !== undefined) {
  argv = [tsx, path.join(import.meta.dirname, "src", "scripts", `${name}.ts`), ...args];
} else if (existsSync(built)) {
  argv = ["--conditions=berth-dist", built, ...args];
} else {
  process.stderr.write(`${built} is missing: run \`npm run build\` (with the development dependencies installed) first\n`);
  process.exit(1);
}

const child = spawnSync(process.execPath, argv, { stdio: "inherit" });
if (child.error) throw child.error;
if (child.signal) process.kill(process.pid, child.signal);
process.exit(child.status ?? 1);
