// Where the mail catcher listens: the host's address on a bridge network Berth owns,
// made or adopted at the agent's start like the proxy's network. Only this host has that
// address; ERP containers reach it through their own bridge's gateway (the host routes it),
// and nothing is published on the server's public interfaces.
import type { DockerClient } from "../docker/docker-client.ts";
import { isManaged, serverObjectLabels } from "../docker/labels.ts";
import { CodedError } from "../coded-error.ts";

export class MailCatcherError extends CodedError {
  override name = "MailCatcherError";
}

/** The catcher's network's host address, made if missing. */
export async function ensureMailNetwork(docker: DockerClient, name: string, labels: Readonly<Record<string, string>>): Promise<string> {
  let network = await docker.findNetwork(name);
  if (network === null) {
    // Another agent of this engine (tests run several) may make it at the same moment: adopt theirs.
    await docker.createNetwork(name, serverObjectLabels("mail-network", labels)).catch(async (err: unknown) => {
      if ((await docker.findNetwork(name)) === null) throw err;
    });
    network = await docker.findNetwork(name);
  } else if (!isManaged(network.labels)) {
    throw new MailCatcherError("name_conflict", `network ${name} exists but is not Berth's: the mail catcher cannot use it`);
  }
  if (!network?.gateway) throw new MailCatcherError("mail_catcher_unavailable", `network ${name} has no gateway address for the mail catcher to listen on`);
  return network.gateway;
}
