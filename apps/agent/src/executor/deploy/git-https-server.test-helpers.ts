// A Git host for tests over HTTPS, the transport an agent's git allows (with ssh): git's
// smart HTTP (git http-backend as CGI) behind a Node HTTPS server on 127.0.0.1, with a
// certificate of a test CA made here with openssl. The test process trusts that CA through
// GIT_SSL_CAINFO in its own environment (the agent's git inherits it), which is how an
// operator would trust a private CA too: nothing in the agent's settings or code opens a
// transport for tests, so file:// and local paths stay refused whatever a test does.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
const HTTP_BACKEND = "/usr/lib/git-core/git-http-backend";

/** The test CA and a certificate for 127.0.0.1 signed by it; GIT_SSL_CAINFO set once per process. */
let material: Promise<{ key: Buffer; cert: Buffer; ca: string }> | undefined;
function testCertificates() {
  material ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-git-ca-"));
    const f = (name: string) => join(dir, name);
    const ssl = (args: string[]) => execFileAsync("openssl", args);
    await ssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-days", "2", "-subj", "/CN=Berth test Git CA"]);
    await ssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("host.key"), "-out", f("host.csr"), "-subj", "/CN=127.0.0.1"]);
    await execFileAsync("sh", ["-c", `printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ${f("ext.cnf")}`]);
    await ssl(["x509", "-req", "-in", f("host.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f("host.pem"), "-days", "2", "-extfile", f("ext.cnf")]);
    process.env.GIT_SSL_CAINFO = f("ca.pem");
    return { key: await readFile(f("host.key")), cert: await readFile(f("host.pem")), ca: f("ca.pem") };
  })();
  return material;
}

export interface GitHttpsServer {
  /** https://127.0.0.1:<port>/<path under root> */
  url(pathUnderRoot: string): string;
  /** The request paths the server was asked for (to show a token is in none). */
  seen: string[];
  close(): Promise<void>;
}

/**
 * Serves the bare repositories under `root`; with `authorization`, only requests carrying that
 * header. `plain`: over http:// instead (what an agent must refuse to fetch from).
 */
export async function startGitHttpsServer(root: string, opts: { authorization?: string; plain?: boolean } = {}): Promise<GitHttpsServer> {
  const { key, cert } = await testCertificates();
  const seen: string[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req.url ?? "");
    if (opts.authorization !== undefined && req.headers.authorization !== opts.authorization) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"' }).end("no");
      return;
    }
    const url = new URL(req.url ?? "/", "https://x");
    const cgi = spawn(HTTP_BACKEND, [], {
      env: {
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET",
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
        REMOTE_USER: "test",
        REMOTE_ADDR: "127.0.0.1",
      },
    });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on("data", (c: Buffer) => chunks.push(c));
    cgi.on("close", () => {
      const out = Buffer.concat(chunks);
      const split = out.indexOf("\r\n\r\n");
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of out.subarray(0, Math.max(0, split)).toString().split("\r\n")) {
        const [name, ...rest] = line.split(":");
        if (!name) continue;
        if (name.toLowerCase() === "status") status = Number.parseInt(rest.join(":").trim(), 10);
        else headers[name] = rest.join(":").trim();
      }
      res.writeHead(status, headers).end(split < 0 ? out : out.subarray(split + 4));
    });
  };
  const server: Server | ReturnType<typeof createHttpServer> = opts.plain ? createHttpServer(handler) : createServer({ key, cert }, handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  const port = (server.address() as { port: number }).port;
  return {
    url: (path) => `${opts.plain ? "http" : "https"}://127.0.0.1:${port}/${path.replace(/^\/+/, "")}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One server per test process over the root folder `/`: any bare repository on disk by its absolute path. */
let shared: Promise<GitHttpsServer> | undefined;
export function sharedGitHttpsServer(): Promise<GitHttpsServer> {
  shared ??= startGitHttpsServer("/");
  return shared;
}
