// HAProxy (Debian's package) in front of the replicas: health-checked on /readyz every
// 500 ms (down after 2 failures, up after 2 successes), long tunnel timeout for the agents'
// WebSockets and the SSE streams, redispatch and retries for requests whose connection to a
// replica failed. A replica marked down keeps its open WebSockets and streams (no
// shutdown-sessions): when PostgreSQL restarts every replica's /readyz fails at once, and
// whether the links survive that is the product's to show, not the proxy's to decide. It listens on 127.0.0.1 and, when given, on the network namespace's veth
// address too. Migration uploads are routed as docs/production.md's "Load balancer" asks (one replica per upload).
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";

export interface HaproxyOptions {
  port: number;
  /** Extra addresses to listen on (same port), e.g. the veth's host side. */
  extraBinds: string[];
  replicaPorts: number[];
  dir: string;
}

export function haproxyConfig(o: HaproxyOptions): string {
  const binds = ["127.0.0.1", ...o.extraBinds].map((a) => `  bind ${a}:${o.port}`).join("\n");
  const servers = o.replicaPorts.map((p, i) => `  server cp${i} 127.0.0.1:${p} check inter 500ms fall 2 rise 2`).join("\n");
  return `global
  maxconn 4000
  log stderr format short local0 notice

defaults
  mode http
  log global
  option httplog
  option dontlognull
  option redispatch
  retries 3
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout tunnel 1h
  timeout http-keep-alive 5s
  timeout client-fin 5s
  timeout server-fin 5s

frontend berth
${binds}
  option forwardfor
  # A resumable (tus) upload's file is on the replica that created it: every request of a
  # migration's upload goes to one replica, by a hash of /api/v1/migrations/<id> (docs/production.md, Load balancer).
  acl tus_upload path_reg ^/api/v1/migrations/[^/]+/upload/tus(/|$)
  use_backend uploads if tus_upload
  default_backend replicas

backend replicas
  balance leastconn
  option httpchk GET /readyz
  http-check expect status 200
${servers}

backend uploads
  balance uri depth 4
  hash-type consistent
  option httpchk GET /readyz
  http-check expect status 200
${servers}
`;
}

export interface Haproxy {
  url: string;
  stop(): Promise<void>;
}

export async function startHaproxy(o: HaproxyOptions): Promise<Haproxy> {
  const cfg = path.join(o.dir, "haproxy.cfg");
  await writeFile(cfg, haproxyConfig(o));
  const log = createWriteStream(path.join(o.dir, "haproxy.log"), { flags: "a" });
  const child: ChildProcess = spawn("haproxy", ["-db", "-f", cfg], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const url = `http://127.0.0.1:${o.port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited (${child.exitCode}); see ${path.join(o.dir, "haproxy.log")}`);
    const ok = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error("haproxy did not pass /readyz through within 20 s");
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
