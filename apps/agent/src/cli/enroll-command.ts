// `berth-agent enroll`: one-time registration of this server.
import { systemClock } from "../clock.ts";
import { DEFAULT_STATE_DIR, type EnrollConfig } from "../config/agent-config.ts";
import { createDockerClient } from "../docker/docker-client.ts";
import { EnrollError, enroll } from "../enroll/enroll.ts";
import { gatherHostFacts } from "../enroll/host-facts.ts";
import { keepPackedAddon, PACKED_ADDONS } from "../native/packed-addons.ts";
import { statePaths } from "../state/state-dir.ts";
import type { CliIo } from "./cli-io.ts";

export async function enrollCommand(config: EnrollConfig, io: CliIo): Promise<number> {
  const paths = statePaths(config.stateDir);
  const docker = createDockerClient({ socketPath: config.dockerSocket });
  try {
    const identity = await enroll({
      url: config.url,
      token: config.token,
      paths,
      force: config.force,
      fetch: io.fetch,
      hostFacts: () => gatherHostFacts(docker),
      clock: systemClock,
      say: io.out,
    });
    io.out(`Enrolled as server ${identity.server_id}; identity saved in ${paths.dir}.`);
    for (const addon of PACKED_ADDONS) {
      try {
        // The executable's native addons, kept where `run` loads them from without reading them out of itself.
        keepPackedAddon(paths.dir, addon);
      } catch (error) {
        io.err(`berth-agent: warning: could not keep ${addon} in ${paths.dir} (run will unpack it at each start): ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    io.out(`Start the agent with: berth-agent run${config.stateDir === DEFAULT_STATE_DIR ? "" : ` --state-dir ${paths.dir}`}`);
    return 0;
  } catch (error) {
    if (error instanceof EnrollError) {
      io.err(`berth-agent: ${error.message}`);
      return error.exitCode;
    }
    io.err(`berth-agent: enrolment failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
