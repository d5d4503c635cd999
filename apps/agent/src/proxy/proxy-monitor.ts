// Checks the proxy's names again every BERTH_PROXY_CHECK_INTERVAL: a name whose DNS record
// now points here gets its certificate without a redeploy, and a certificate that was
// obtained, renewed or failed reaches the control plane as proxy.state.
import type { DockerClient } from "../docker/docker-client.ts";
import type { Logger } from "../logger.ts";
import type { ReverseProxy } from "./reverse-proxy.ts";

export function startProxyMonitor(deps: { proxy: ReverseProxy; docker: DockerClient; logger: Logger }): { stop(): Promise<void> } {
  const { proxy, docker, logger } = deps;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;

  const tick = () => {
    running = proxy
      .recheck(docker)
      .catch((error: unknown) => logger.warn({ error: String(error) }, "proxy check failed"))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, proxy.host.checkIntervalMs);
      });
  };
  // The first check soon after start: an agent restarted reports its proxy at once.
  timer = setTimeout(tick, 1_000);
  return {
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
    },
  };
}
