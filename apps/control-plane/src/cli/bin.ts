// The CLI's entry point: runs it on this process's arguments and exits with its code.
import { runCli } from "./main.ts";

process.exit(await runCli(process.argv.slice(2)));
