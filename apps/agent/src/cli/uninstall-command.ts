// `berth-agent uninstall`: runs installers/uninstall.sh, which the executable carries (one
// uninstaller, whichever way it is started). From a source checkout, run that script itself.
// `--print-script` prints it instead: install.sh keeps a root-owned copy, which root's
// `berth-agent uninstall` runs, since root never runs this executable (its user can replace it).
import { spawn } from "node:child_process";
import { EXIT_CONFIG, type UninstallConfig } from "../config/agent-config.ts";
import { seaAssets } from "../native/sea.ts";
import type { CliIo } from "./cli-io.ts";

export const UNINSTALL_ASSET = "uninstall.sh";

export async function uninstallCommand(config: UninstallConfig, io: CliIo): Promise<number> {
  const sea = seaAssets();
  if (sea === null) {
    io.err("berth-agent: uninstall is part of the installed executable; from a source checkout run installers/uninstall.sh");
    return EXIT_CONFIG;
  }
  const script = sea.getAsset(UNINSTALL_ASSET, "utf8");
  if (config.printScript) {
    io.out(script.replace(/\n$/, "")); // io.out ends the line itself: the script's exact bytes
    return 0;
  }
  const args = ["-s", "--", ...(config.purge ? ["--purge"] : []), ...(config.removeContainers ? ["--remove-containers"] : [])];
  const child = spawn("/bin/sh", args, {
    // The script checks for root itself; it removes this executable, which is fine on Linux
    // while it runs.
    stdio: ["pipe", "inherit", "inherit"],
    env: { ...process.env, BERTH_DOCKER_SOCKET: config.dockerSocket },
    cwd: "/",
  });
  child.stdin.end(script);
  return new Promise((resolve) => {
    child.on("error", (error) => {
      io.err(`berth-agent: cannot run /bin/sh: ${error.message}`);
      resolve(1);
    });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
