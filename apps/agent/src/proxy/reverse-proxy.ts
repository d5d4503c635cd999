// The server's reverse proxy as the handlers see it: route an environment, put it in
// maintenance, remove it, and report the proxy's state (each name's DNS answer and
// certificate). Changes are serialised: environments deploy in parallel, the configuration
// is one document.
import { writeFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { EventInput, ProxyRoute, ProxySettings, ProxyStateEvent } from "@berth/protocol";
import type { DockerClient } from "../docker/docker-client.ts";
import type { ContainerDetails } from "../docker/workloads.ts";
import { writeFileAtomic } from "../state/atomic-write.ts";
import { PROXY_ETC_DIR, renderCaddyConfig, type RouteSpec } from "./caddy-config.ts";
import { acmeFailures, servedCertificate, type CertificateStatus } from "./certificate-probe.ts";
import { createDnsChecker, mayCertify, type DnsAnswer, type DnsChecker } from "./dns-check.ts";
import { ensureProxyObjects, httpsAddress, ProxyError, proxyNames, reloadProxy, waitForPort80, type ProxyHostSettings } from "./proxy-container.ts";
import { publicAddresses } from "./public-addresses.ts";
import { createRouteStore, type ProxyDesiredState, type StoredRoute } from "./route-store.ts";

type Log = (level: "info" | "warning", message: string) => void;

export interface RouteRequest {
  environmentId: string;
  names: string[];
  upstream: string;
  network: string;
  gevent: boolean;
  dns: Record<string, DnsAnswer>;
  /** Default serving. */
  mode?: RouteSpec["mode"];
}

export type ProxyStateInput = Omit<ProxyStateEvent, "seq" | "ts">;

interface Probe {
  container: ContainerDetails | null;
  address: { host: string; port: number } | null;
  failures: Map<string, string>;
}

export interface ReverseProxy {
  readonly host: ProxyHostSettings;
  readonly dns: DnsChecker;
  /** The addresses domains must point to. */
  publicAddresses(): string[];
  /** Adds or replaces the environment's route (serving), starting or upgrading the proxy as needed. */
  route(docker: DockerClient, request: RouteRequest, settings: ProxySettings | undefined, log: Log): Promise<void>;
  /** Serving or maintenance; false when the environment has no route. */
  setMode(docker: DockerClient, environmentId: string, mode: RouteSpec["mode"], log: Log): Promise<boolean>;
  /** Removes the environment's route and detaches the proxy from its network; false when it had none. */
  remove(docker: DockerClient, environmentId: string, log: Log): Promise<boolean>;
  /** Waits up to `waitMs` for each name's certificate; the status of each. */
  awaitCertificates(docker: DockerClient, names: string[], waitMs: number, signal: AbortSignal): Promise<Map<string, CertificateStatus>>;
  /** Checks DNS again, applies what changed (a name that now resolves here gets its certificate), reports. */
  recheck(docker: DockerClient): Promise<void>;
  /** Builds the proxy.state event and reports it: always when forced, else only when it changed. */
  report(docker: DockerClient, options?: { force?: boolean }): Promise<ProxyStateInput>;
}

export function createReverseProxy(deps: {
  stateDir: string;
  host: ProxyHostSettings;
  /** Where proxy.state goes (the event outbox); absent: nowhere. */
  emit?: (event: EventInput) => void;
  /** Extra labels on the proxy's Docker objects (tests mark theirs). */
  labels?: Readonly<Record<string, string>>;
}): ReverseProxy {
  const { host } = deps;
  const dir = join(deps.stateDir, "proxy");
  const etcDir = join(dir, "etc");
  const store = createRouteStore(dir);
  const addresses = () => publicAddresses(host.publicAddresses);
  const dns = createDnsChecker({ servers: host.dnsServers, expected: addresses });
  let chain: Promise<unknown> = Promise.resolve();
  let lastReported = "";
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = chain.then(work, work);
    chain = next.catch(() => undefined);
    return next;
  };

  /**
   * Writes the configuration and the CA root the proxy reads from `etcDir`. `bootstrap` leaves every name without a certificate: the configuration a new proxy
   * container starts with. Its first ACME validation would otherwise race Docker publishing
   * port 80 (seen: Pebble's connection refused in the first moments, then Caddy's 60 s
   * back-off); the full configuration is loaded once port 80 answers.
   */
  function writeFiles(state: ProxyDesiredState, bootstrap = false): void {
    mkdirSync(etcDir, { recursive: true, mode: 0o755 });
    const rootFile = join(etcDir, "acme-ca-root.pem");
    if (state.settings.acme_ca_root === null) rmSync(rootFile, { force: true });
    else writeFileSync(rootFile, state.settings.acme_ca_root, { mode: 0o644 });
    const certify = bootstrap ? new Set<string>() : new Set(state.routes.flatMap((r) => r.names.filter((n) => mayCertify(r.dns[n] ?? { status: "unchecked" }))));
    const config = renderCaddyConfig({
      routes: state.routes,
      certify,
      acme: {
        ca: state.settings.acme_ca,
        caRootFile: state.settings.acme_ca_root === null ? null : `${PROXY_ETC_DIR}/acme-ca-root.pem`,
        email: state.settings.acme_email,
      },
    });
    writeFileAtomic(join(etcDir, "caddy.json"), config, 0o644);
  }

  /** The proxy running with `state`'s routes, attached to every route's network. */
  async function apply(docker: DockerClient, state: ProxyDesiredState, log: Log): Promise<string> {
    writeFiles(state);
    const objects = await ensureProxyObjects(docker, host, state.settings.image, etcDir, deps.labels ?? {}, log, () => writeFiles(state, true));
    if (objects.fresh) {
      await waitForPort80(docker, host, objects.containerId);
      writeFiles(state);
    }
    for (const route of state.routes) {
      const network = await docker.findNetwork(route.network);
      if (network === null) {
        log("warning", `Network ${route.network} of environment ${route.environmentId} is gone: its route cannot reach the ERP`);
        continue;
      }
      await docker.connectNetwork(route.network, objects.containerId);
    }
    await reloadProxy(docker, objects.containerId, objects.fresh);
    return objects.containerId;
  }

  /** What the certificate checks of one pass read: where the proxy answers, and Caddy's ACME failures; one inspect, one log read. */
  async function probe(docker: DockerClient): Promise<Probe> {
    const container = await docker.inspectContainer(proxyNames(host).container).catch(() => null);
    if (container?.running !== true) return { container, address: null, failures: new Map() };
    const failures = acmeFailures(await docker.containerLogs(container.id, 500).catch(() => ""));
    return { container, address: httpsAddress(host, container), failures };
  }

  async function certificateOf(name: string, certify: boolean, seen: Probe): Promise<CertificateStatus> {
    if (!certify) return { status: "not_requested", not_after: null, issuer: null, error: null };
    const served = seen.address === null ? null : await servedCertificate(seen.address.host, seen.address.port, name);
    if (served !== null) return { status: "valid", not_after: served.notAfter.toISOString(), issuer: served.issuer, error: null };
    const failure = seen.failures.get(name);
    return failure === undefined
      ? { status: "pending", not_after: null, issuer: null, error: null }
      : { status: "error", not_after: null, issuer: null, error: failure };
  }

  async function state(docker: DockerClient): Promise<ProxyStateInput> {
    const { settings, routes } = store.read();
    const seen = await probe(docker);
    const { container } = seen;
    const running = container?.running === true;
    const reported: ProxyRoute[] = [];
    for (const route of routes) {
      const domains = [];
      for (const name of route.names) {
        const answer = route.dns[name] ?? { status: "unchecked" as const, resolved: [], expected: addresses() };
        domains.push({
          name,
          dns: { status: answer.status, resolved: answer.resolved.slice(0, 32), expected: answer.expected.slice(0, 32) },
          certificate: running
            ? await certificateOf(name, mayCertify(answer), seen)
            : { status: mayCertify(answer) ? ("pending" as const) : ("not_requested" as const), not_after: null, issuer: null, error: null },
        });
      }
      reported.push({ environment_id: route.environmentId, mode: route.mode, domains });
    }
    return {
      kind: "proxy.state",
      running,
      image: container?.image ?? (routes.length > 0 ? settings.image : null),
      public_addresses: addresses().slice(0, 32),
      error: container === null ? (routes.length > 0 ? "the proxy container does not exist" : null) : running ? null : `the proxy container is ${container.state}`,
      routes: reported,
    };
  }

  const proxy: ReverseProxy = {
    host,
    dns,
    publicAddresses: addresses,

    route(docker, request, settings, log) {
      return serial(async () => {
        const current = store.read();
        const others = current.routes.filter((r) => r.environmentId !== request.environmentId);
        const taken = others.find((r) => r.names.some((n) => request.names.includes(n)));
        if (taken !== undefined) {
          throw new ProxyError("domain_in_use", `${request.names.find((n) => taken.names.includes(n))} is already routed to environment ${taken.environmentId} on this server`);
        }
        const route: StoredRoute = { ...request, mode: request.mode ?? "serving" };
        const next: ProxyDesiredState = { settings: settings ?? current.settings, routes: [...others, route] };
        await apply(docker, next, log);
        store.write(next);
      });
    },

    setMode(docker, environmentId, mode, log) {
      return serial(async () => {
        const current = store.read();
        const route = current.routes.find((r) => r.environmentId === environmentId);
        if (route === undefined) return false;
        const next = { ...current, routes: current.routes.map((r) => (r === route ? { ...r, mode } : r)) };
        await apply(docker, next, log);
        store.write(next);
        return true;
      });
    },

    remove(docker, environmentId, log) {
      return serial(async () => {
        const current = store.read();
        const route = current.routes.find((r) => r.environmentId === environmentId);
        if (route === undefined) return false;
        const next = { ...current, routes: current.routes.filter((r) => r !== route) };
        // The route is dropped even if the proxy cannot be updated now: it must not come back.
        store.write(next);
        const container = await docker.inspectContainer(proxyNames(host).container);
        if (container === null) return true;
        await apply(docker, next, log);
        await docker.disconnectNetwork(route.network, container.id);
        return true;
      });
    },

    async awaitCertificates(docker, names, waitMs, signal) {
      const deadline = Date.now() + waitMs;
      const statuses = new Map<string, CertificateStatus>();
      for (;;) {
        const seen = await probe(docker);
        for (const name of names) statuses.set(name, await certificateOf(name, true, seen));
        // A refusal is waited out too: Caddy tries again (after 60 s the first time), within the wait.
        const waiting = [...statuses.values()].some((s) => s.status !== "valid");
        if (!waiting || Date.now() >= deadline || signal.aborted) return statuses;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },

    recheck(docker) {
      return serial(async () => {
        const current = store.read();
        if (current.routes.length === 0) return false;
        let changed = false;
        const routes: StoredRoute[] = [];
        for (const route of current.routes) {
          const dnsNow: Record<string, DnsAnswer> = {};
          for (const name of route.names) {
            dnsNow[name] = await dns.check(name);
            if (mayCertify(dnsNow[name]) !== mayCertify(route.dns[name] ?? { status: "unchecked" })) changed = true;
          }
          routes.push({ ...route, dns: dnsNow });
        }
        const next = { ...current, routes };
        if (changed) await apply(docker, next, () => undefined);
        store.write(next);
        return true;
      }).then(async (routed) => {
        // A server that never routed anything has nothing to report; one whose last route went reports that once.
        if (routed || lastReported !== "") await proxy.report(docker);
      });
    },

    async report(docker, options = {}) {
      const event = await state(docker);
      const text = JSON.stringify(event);
      if (options.force === true || text !== lastReported) deps.emit?.(event);
      lastReported = text;
      return event;
    },
  };
  return proxy;
}
