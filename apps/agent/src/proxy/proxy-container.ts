// The reverse proxy's Docker objects: one container per server with its own network and a
// data volume for certificates and the ACME account. Ensuring them is idempotent: a running
// proxy of the right image is adopted as it is (after an agent restart or reinstall), a
// stopped one is started, one of another image or other ports is replaced (an upgrade).
import type { DockerClient } from "../docker/docker-client.ts";
import type { ContainerDetails } from "../docker/workloads.ts";
import { isManaged, ROLE_LABEL, serverObjectLabels } from "../docker/labels.ts";
import { CodedError } from "../coded-error.ts";
import { ADMIN_ADDRESS, PROXY_CONFIG_FILE, PROXY_DATA_DIR, PROXY_ETC_DIR } from "./caddy-config.ts";

export interface ProxyHostSettings {
  /** The container's name; its network has the same name, its volume `<name>-data`. */
  name: string;
  /** Host ports for 80 and 443; "" lets Docker choose (tests). */
  httpPort: string;
  httpsPort: string;
  /** The host address they listen on; "" is every address. */
  bindAddress: string;
  /** The addresses domains must point to; null: the host's public interface addresses. */
  publicAddresses: string[] | null;
  /** Resolvers for DNS checks ("address" or "address:port"); null: the system's. */
  dnsServers: string[] | null;
  /** How often DNS answers and certificates are checked again. */
  checkIntervalMs: number;
  /** How long a deploy waits for a new certificate before it reports it as pending. */
  certificateWaitMs: number;
}

export const DEFAULT_PROXY_HOST: ProxyHostSettings = {
  name: "berth-proxy",
  httpPort: "80",
  httpsPort: "443",
  bindAddress: "",
  publicAddresses: null,
  dnsServers: null,
  checkIntervalMs: 5 * 60_000,
  certificateWaitMs: 60_000,
};

export class ProxyError extends CodedError {
  override name = "ProxyError";
}

type Log = (level: "info" | "warning", message: string) => void;

export interface ProxyObjects {
  containerId: string;
  /** Created or replaced now: it loaded the configuration file itself as it started. */
  fresh: boolean;
}

export function proxyNames(host: ProxyHostSettings) {
  return { container: host.name, network: host.name, volume: `${host.name}-data` };
}

/** Network, volume and a running container of `image`, with `etcDir` mounted; created or adopted. */
export async function ensureProxyObjects(
  docker: DockerClient,
  host: ProxyHostSettings,
  image: string,
  etcDir: string,
  labels: Readonly<Record<string, string>>,
  log: Log,
  /** Called before a container is started (created, restarted or replaced). */
  beforeStart: () => void = () => undefined,
): Promise<ProxyObjects> {
  const names = proxyNames(host);
  const network = await docker.findNetwork(names.network);
  if (network === null) {
    await docker.createNetwork(names.network, serverObjectLabels("proxy-network", labels));
    log("info", `Created the proxy's network ${names.network}`);
  } else if (!isManaged(network.labels)) {
    throw new ProxyError("name_conflict", `network ${names.network} exists but is not Berth's: the proxy cannot use it`);
  }
  const volume = await docker.findVolume(names.volume);
  if (volume === null) {
    await docker.createVolume(names.volume, serverObjectLabels("proxy-data", labels));
    log("info", `Created the proxy's volume ${names.volume} (certificates and ACME account)`);
  } else if (!isManaged(volume.labels)) {
    throw new ProxyError("name_conflict", `volume ${names.volume} exists but is not Berth's: the proxy cannot use it`);
  }

  const existing = await docker.inspectContainer(names.container);
  if (existing !== null) {
    if (!isManaged(existing.labels) || existing.labels[ROLE_LABEL] !== "proxy") {
      throw new ProxyError("name_conflict", `container ${names.container} exists but is not Berth's proxy: Berth leaves it alone`);
    }
    const sameSpec = existing.image === image && existing.labels[SPEC_LABEL] === specOf(host, etcDir);
    if (sameSpec) {
      if (existing.running) return { containerId: existing.id, fresh: false };
      beforeStart();
      await docker.startContainer(existing.id);
      log("info", `Started the proxy ${names.container}`);
      return { containerId: existing.id, fresh: true };
    }
    log("info", `Replacing the proxy ${names.container} (${existing.image} → ${image}); certificates are kept on ${names.volume}`);
    await docker.removeContainer(existing.id);
  }

  await ensureImage(docker, image, log);
  beforeStart();
  let id: string;
  try {
    id = await docker.createContainer({
      name: names.container,
      image,
      labels: { ...serverObjectLabels("proxy", labels), [SPEC_LABEL]: specOf(host, etcDir) },
      cmd: ["caddy", "run", "--config", PROXY_CONFIG_FILE],
      env: [`XDG_DATA_HOME=${PROXY_DATA_DIR}`],
      network: names.network,
      binds: [`${etcDir}:${PROXY_ETC_DIR}:ro`, `${names.volume}:${PROXY_DATA_DIR}`],
      publish: [
        { port: "80/tcp", hostIp: host.bindAddress, hostPort: host.httpPort },
        { port: "443/tcp", hostIp: host.bindAddress, hostPort: host.httpsPort },
      ],
      restartPolicy: "unless-stopped",
    });
    await docker.startContainer(id);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const taken = /address already in use|port is already allocated/i.test(reason);
    throw new ProxyError(
      "proxy_unavailable",
      taken
        ? `the proxy cannot listen on ports ${host.httpPort || "(any)"} and ${host.httpsPort || "(any)"}: another program on this server uses them (${reason})`
        : `the proxy ${names.container} did not start: ${reason}`,
    );
  }
  log("info", `Started the proxy ${names.container} (${image}) on ports ${host.httpPort || "(chosen)"} and ${host.httpsPort || "(chosen)"}`);
  return { containerId: id, fresh: true };
}

/** Loads the configuration file through the admin API; Caddy swaps it without dropping connections. */
export async function reloadProxy(docker: DockerClient, containerId: string, fresh: boolean): Promise<void> {
  // A container that just started may not listen on its admin address for a moment.
  const attempts = fresh ? 20 : 3;
  let last = "";
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const result = await docker.exec(containerId, ["caddy", "reload", "--config", PROXY_CONFIG_FILE, "--address", ADMIN_ADDRESS], {
      deadlineMs: 30_000,
    });
    if (result.exitCode === 0) return;
    last = (result.stderr || result.stdout).trim().split("\n").slice(-3).join(" ");
    if (!/connection refused|connect: /i.test(last)) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new ProxyError("proxy_config_rejected", `the proxy refused its new configuration: ${last}`);
}

/** Until the proxy answers on its published port 80 (any HTTP answer), at most `timeoutMs`. */
export async function waitForPort80(docker: DockerClient, host: ProxyHostSettings, containerId: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const details = await docker.inspectContainer(containerId);
    const port = details?.hostPorts["80/tcp"];
    if (port) {
      const answered = await fetch(`http://${hostAddress(host)}:${port}/`, { signal: AbortSignal.timeout(1_000), redirect: "manual" }).then(
        async (response) => {
          await response.body?.cancel();
          return true;
        },
        () => false,
      );
      if (answered) return;
    }
    if (Date.now() > deadline) throw new ProxyError("proxy_unavailable", `the proxy did not answer on port ${port ?? "80"} within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The address to reach the proxy's published ports from this host. */
function hostAddress(host: ProxyHostSettings): string {
  if (host.bindAddress === "" || host.bindAddress === "0.0.0.0") return "127.0.0.1";
  if (host.bindAddress === "::") return "[::1]";
  return host.bindAddress.includes(":") ? `[${host.bindAddress}]` : host.bindAddress;
}

/** Where the proxy answers on this host, for the certificate probe. */
export function httpsAddress(host: ProxyHostSettings, details: ContainerDetails): { host: string; port: number } | null {
  const port = details.hostPorts["443/tcp"];
  if (!details.running || !port) return null;
  return { host: hostAddress(host).replace(/^\[|\]$/g, ""), port: Number(port) };
}

async function ensureImage(docker: DockerClient, image: string, log: Log): Promise<void> {
  if (await docker.imageExists(image)) return;
  log("info", `Pulling the proxy image ${image}`);
  try {
    await docker.pullImage(image);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ProxyError("image_unavailable", `proxy image ${image} not found locally and could not be pulled: ${reason}`);
  }
}

/** What the container was made with beyond its image: a change means it must be replaced. */
const SPEC_LABEL = "berth.proxy_spec";

function specOf(host: ProxyHostSettings, etcDir: string): string {
  return JSON.stringify([host.bindAddress, host.httpPort, host.httpsPort, etcDir]);
}
