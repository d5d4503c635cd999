// A small Internet for certificate tests, all on this machine: Pebble (Let's Encrypt's ACME
// test server, Debian's package) and its challenge test server answering DNS for the test
// names. Pebble validates HTTP-01 by resolving a name through that DNS and connecting to
// the answer on `httpPort`, the proxy's published port 80, exactly as Let's Encrypt does.
// Pebble listens on the Docker bridge's gateway address, which the proxy container reaches
// without any route out of this machine.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { createServer, isIP } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Dockerode from "dockerode";

const exec = promisify(execFile);

export interface AcmeWorld {
  /** The ACME directory URL the proxy is given. */
  directory: string;
  /** PEM of the CA of Pebble's own HTTPS listener (the proxy's acme_ca_root). */
  listenerCaPem: string;
  /** "127.0.0.1:<port>": the DNS server with the test names (the agent's BERTH_DNS_SERVERS). */
  dnsServer: string;
  /** PEM of the root Pebble signs certificates with (what a test's HTTPS client trusts). */
  issuingRoot(): Promise<string>;
  /** Sets the name's A records (replacing any). */
  setA(name: string, addresses: string[]): Promise<void>;
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Fails with what to install when Pebble is missing. */
export async function requirePebble(): Promise<void> {
  for (const bin of ["pebble", "pebble-challtestsrv", "openssl"]) {
    await exec("sh", ["-c", `command -v ${bin}`]).catch(() => {
      throw new Error(`${bin} is missing: run \`bash .ci/docker-setup.sh\` (it installs Debian's pebble and openssl)`);
    });
  }
}

export async function startAcmeWorld(options: { httpPort: number }): Promise<AcmeWorld> {
  await requirePebble();
  const dir = await mkdtemp(join(tmpdir(), "berth-acme-"));
  const children: ChildProcess[] = [];
  const output: string[] = [];
  const start = (command: string, args: string[], env: Record<string, string> = {}) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => output.push(`${command}: ${chunk.toString("utf8")}`);
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    children.push(child);
    return child;
  };
  const close = async () => {
    for (const child of children) child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const gateway = await bridgeGateway();
    const [acmePort, managementPort, dnsPort, dnsManagementPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    // Pebble's HTTPS listener: a self-signed certificate for the gateway address.
    await exec("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
      "-keyout", join(dir, "listener.key"), "-out", join(dir, "listener.crt"),
      "-subj", "/CN=pebble", "-addext", `subjectAltName=IP:${gateway},IP:127.0.0.1,DNS:localhost`,
    ]);
    const listenerCaPem = await readFile(join(dir, "listener.crt"), "utf8");
    await writeFile(
      join(dir, "pebble.json"),
      JSON.stringify({
        pebble: {
          listenAddress: `${gateway}:${acmePort}`,
          managementListenAddress: `127.0.0.1:${managementPort}`,
          certificate: join(dir, "listener.crt"),
          privateKey: join(dir, "listener.key"),
          httpPort: options.httpPort,
          tlsPort: 5001,
          ocspResponderURL: "",
          externalAccountBindingRequired: false,
        },
      }),
    );
    // No default answers: a name resolves only once a test gives it a record.
    start("pebble-challtestsrv", [
      "-dns01", `127.0.0.1:${dnsPort}`, "-http01", "", "-https01", "", "-tlsalpn01", "",
      "-management", `127.0.0.1:${dnsManagementPort}`, "-defaultIPv4", "", "-defaultIPv6", "",
    ]);
    start("pebble", ["-config", join(dir, "pebble.json"), "-dnsserver", `127.0.0.1:${dnsPort}`], {
      // No random sleeps before validations, and no nonces refused at random: tests wait less.
      PEBBLE_VA_NOSLEEP: "1",
      PEBBLE_WFE_NONCEREJECT: "0",
    });
    const directory = `https://${gateway}:${acmePort}/dir`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const up = await get(directory, listenerCaPem).then((r) => r.status === 200, () => false);
      const dnsUp = await fetch(`http://127.0.0.1:${dnsManagementPort}/clear-a`, { method: "POST", body: JSON.stringify({ host: "probe.test" }) }).then(
        (r) => r.ok,
        () => false,
      );
      if (up && dnsUp) break;
      if (Date.now() > deadline) throw new Error(`Pebble did not start:\n${output.join("").slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return {
      directory,
      listenerCaPem,
      dnsServer: `127.0.0.1:${dnsPort}`,
      async issuingRoot() {
        const response = await get(`https://127.0.0.1:${managementPort}/roots/0`, listenerCaPem);
        if (response.status !== 200) throw new Error(`Pebble's root: HTTP ${response.status}`);
        return response.body;
      },
      async setA(name, addresses) {
        const response = await fetch(`http://127.0.0.1:${dnsManagementPort}/add-a`, {
          method: "POST",
          body: JSON.stringify({ host: name, addresses }),
        });
        if (!response.ok) throw new Error(`challtestsrv add-a ${name}: HTTP ${response.status}`);
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The default bridge's gateway: an address of this machine every container can reach. The
 * engine does not always name it in the network's IPAM config (seen with Docker 20.10 when
 * it chose the bridge's subnet itself); it is then the subnet's first address, which the
 * engine gives the bridge.
 */
async function bridgeGateway(): Promise<string> {
  const bridge = (await new Dockerode().getNetwork("bridge").inspect()) as { IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] } };
  const config = bridge.IPAM?.Config?.find((c) => c.Subnet !== undefined && isIP(c.Subnet.split("/")[0]!) === 4);
  if (config?.Gateway) return config.Gateway;
  const network = config?.Subnet?.split("/")[0];
  if (!network) throw new Error("the Docker bridge network has neither a gateway address nor an IPv4 subnet");
  const n = network.split(".").reduce((acc, octet) => acc * 256 + Number(octet), 0) + 1;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/** GET over HTTPS trusting `ca` only. */
export function get(url: string, ca: string, options: { servername?: string; host?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const request = httpsRequest(
      {
        host: options.host ?? target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        ca,
        // SNI carries names only; an address is left out.
        ...(options.servername !== undefined ? { servername: options.servername } : isIP(target.hostname) === 0 ? { servername: target.hostname } : {}),
        headers: { host: target.host },
        agent: false,
        timeout: 10_000,
      },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      },
    );
    request.on("timeout", () => request.destroy(new Error(`GET ${url}: no answer`)));
    request.on("error", reject);
    request.end();
  });
}
