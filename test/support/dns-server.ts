// A real DNS server for tests: dnsmasq on 127.0.0.1 (a free UDP port), answering only the
// records a test gives it (--no-resolv: nothing else is asked upstream). Restarted with the
// new records when a test adds some.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createSocket } from "node:dgram";
import type { Res } from "./http.ts";

export const DNSMASQ = "/usr/sbin/dnsmasq";
export const dnsmasqMissing = () => (existsSync(DNSMASQ) ? null : `${DNSMASQ} is missing: apt-get install -y dnsmasq`);

async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(resolve));
  return port;
}

/** An API client as test/support/http.ts makes them (public or platform). */
interface Client {
  get(path: string): Promise<Res>;
  post(path: string, body?: unknown): Promise<Res>;
}

/**
 * Proves an environment's claims of `names` the way their owner would: the TXT record each
 * claim shows (GET /environments/{id}/domains) served by `dns`, then POST .../verify.
 */
export async function proveClaims(dns: TestDns, client: Client, env: string, names: string[]): Promise<void> {
  const claims = (await client.get(`/environments/${env}/domains`)).body.data as { name: string; verification: { name: string; value: string } }[];
  for (const name of names) {
    const claim = claims.find((c) => c.name === name);
    if (!claim) throw new Error(`environment ${env} has no claim of ${name}`);
    await dns.txt(claim.verification.name, claim.verification.value);
    const verified = await client.post(`/environments/${env}/domains/${name}/verify`);
    if (verified.body.status !== "verified") throw new Error(`${name} was not verified: ${JSON.stringify(verified.body)}`);
  }
}

export interface TestDns {
  /** "127.0.0.1:<port>", for BERTH_DNS_SERVERS. */
  server: string;
  txt(name: string, value: string): Promise<void>;
  address(name: string, ip: string): Promise<void>;
  cname(name: string, target: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTestDns(): Promise<TestDns> {
  const port = await freeUdpPort();
  const records: string[] = [];
  let proc: ChildProcess | null = null;
  const stop = async () => {
    if (!proc) return;
    const p = proc;
    proc = null;
    await new Promise<void>((resolve) => {
      p.once("exit", () => resolve());
      p.kill("SIGTERM");
    });
  };
  const start = async () => {
    await stop();
    const args = ["--keep-in-foreground", "--no-resolv", "--no-hosts", "--no-daemon", `--port=${port}`, "--listen-address=127.0.0.1", "--bind-interfaces", "--user=root", "--cache-size=0", ...records];
    const p = spawn(DNSMASQ, args, { stdio: ["ignore", "ignore", "pipe"] });
    proc = p;
    // Answering once the socket is bound: dnsmasq logs "started" on stderr.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("dnsmasq did not start")), 5000);
      p.stderr!.on("data", (c: Buffer) => {
        if (c.toString().includes("started")) {
          clearTimeout(timer);
          resolve();
        }
      });
      p.once("exit", (code) => reject(new Error(`dnsmasq exited (${code})`)));
    });
  };
  await start();
  return {
    server: `127.0.0.1:${port}`,
    async txt(name, value) {
      records.push(`--txt-record=${name},${value}`);
      await start();
    },
    async address(name, ip) {
      records.push(`--host-record=${name},${ip}`);
      await start();
    },
    async cname(name, target) {
      records.push(`--cname=${name},${target}`);
      await start();
    },
    close: stop,
  };
}
