// The CLI's entry point: runs it on this process's arguments and exits with its code. No
// top-level await: the single executable (installers/build/build-cli.ts) bundles it as CommonJS.
import { runCli } from "./main.ts";

void runCli(process.argv.slice(2)).then((code) => process.exit(code));
