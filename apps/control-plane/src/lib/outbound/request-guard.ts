// The one way the control plane sends an HTTP request to a URL someone gave it (webhook
// receivers today, backup import URLs next): a guard against server-side request forgery.
//
// The guard resolves the host itself, checks every address of the answer (address-policy.ts:
// only global unicast, unless the operator's allow-list says otherwise) and hands the
// checked addresses to the socket as its `lookup`, so the connection goes to exactly an
// address that was checked. There is no second lookup between the check and the connect,
// so a DNS answer that changes in between (rebinding) cannot reach a private address. An
// answer holding any refused address is refused as a whole. Address literals (which the
// socket does not look up) are checked before the request is made.
//
// Redirects are never followed: a 3xx comes back as the answer. A caller that wants to
// follow one calls request() again with the Location, which checks that hop anew.
//
// Errors: OutboundRefused (the target is not allowed; nothing was sent) and OutboundFailure
// (the request failed), both with a generic message safe to show to the caller: the
// low-level error stays in `cause` for the logs.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { allowsAddress, allowsHost, EMPTY_ALLOW_LIST, ipLiteral, literalRefusal, mayConnect, normalizeHost, parseAllowList, refusedRange, type AllowList } from "./address-policy.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Every address of a host name, as the system resolver (getaddrinfo) answers. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** The target is not allowed: a refused name, or an address the policy refuses. Nothing was sent. */
export class OutboundRefused extends Error {
  override readonly name = "OutboundRefused";
  /** Why, for the logs (e.g. "loopback", "private", "refusedName"); not for callers. */
  readonly reason: string;
  constructor(reason: string) {
    super("refused: the target's address is not allowed");
    this.reason = reason;
  }
}

export type FailureKind = "dns" | "timeout" | "connection_refused" | "connection_reset" | "unreachable" | "tls" | "protocol" | "other";
const FAILURE_MESSAGES: Record<FailureKind, string> = {
  dns: "the host name could not be resolved",
  timeout: "no answer in time",
  connection_refused: "the connection was refused",
  connection_reset: "the connection was closed before an answer",
  unreachable: "the host is unreachable",
  tls: "the TLS handshake failed",
  protocol: "the answer was not valid HTTP",
  other: "the request failed",
};

/** The request failed without an answer. Its message is generic; the original error is its cause. */
export class OutboundFailure extends Error {
  override readonly name = "OutboundFailure";
  readonly kind: FailureKind;
  constructor(kind: FailureKind, cause?: unknown) {
    super(FAILURE_MESSAGES[kind], cause === undefined ? undefined : { cause });
    this.kind = kind;
  }
}

/** The kind of a low-level (Node) request error. */
export function failureKind(err: unknown): FailureKind {
  const code = String((err as { code?: unknown } | null)?.code ?? "");
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_FAIL" || code === "EAI_NODATA" || code === "ENODATA") return "dns";
  if (code === "ETIMEDOUT" || code === "ABORT_ERR" || code === "UND_ERR_CONNECT_TIMEOUT") return "timeout";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET") return "connection_reset";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "EADDRNOTAVAIL") return "unreachable";
  if (code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL") || code.includes("CERT") || code.includes("SELF_SIGNED") || code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE") return "tls";
  if (code.startsWith("HPE_")) return "protocol";
  return "other";
}

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The whole request, connect to last byte read (default 10 s). */
  timeoutMs?: number;
  /** At most this much of the answer's body is read (bytes; default 64 KiB); the rest is dropped. */
  maxResponseBytes?: number;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body's first maxResponseBytes, as UTF-8. */
  body: string;
}

export interface RequestGuardOptions {
  /** The operator's exceptions (BERTH_OUTBOUND_ALLOW): entries, one comma-separated text, or a parsed list. */
  allow?: string | readonly string[] | AllowList;
  /** How host names are resolved (default: the system resolver). Tests map names to loopback here. */
  resolve?: Resolver;
}

export interface RequestGuard {
  /**
   * Why a URL is refused without resolving it (not http(s), a refused name such as
   * localhost, or a refused address literal not on the allow-list), or null. Names that
   * pass are checked again, after resolution, when a request is made.
   */
  refusalWithoutLookup(url: string | URL): string | null;
  /** Whether the URL's host is on the operator's allow-list (a listed name, or a literal in a listed range). */
  isListed(url: string | URL): boolean;
  /**
   * Resolves and checks a URL's host now, for early feedback; throws OutboundRefused or
   * OutboundFailure. A pass is advice only: request() checks again when it connects.
   */
  check(url: string | URL): Promise<void>;
  /** One request, to a checked address only; throws OutboundRefused or OutboundFailure, never a low-level error. */
  request(url: string | URL, init?: OutboundRequest): Promise<OutboundResponse>;
  /**
   * A GET whose answer's body is handed over as a stream (large downloads: import URLs), to a
   * checked address only. Resolves at the answer's headers; `signal` aborts the request and
   * the body. Throws OutboundRefused or OutboundFailure before the answer.
   */
  stream(url: string | URL, init?: OutboundStreamRequest): Promise<OutboundStream>;
}

export interface OutboundStreamRequest {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Extra trusted CA certificates (tests' local HTTPS servers). */
  ca?: string | Buffer;
}

export interface OutboundStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: http.IncomingMessage;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

function parseUrl(url: string | URL): URL | null {
  if (url instanceof URL) return url;
  try {
    return new URL(url);
  } catch {
    return null;
  }
}

export function createRequestGuard(opts: RequestGuardOptions = {}): RequestGuard {
  const allow = opts.allow ?? EMPTY_ALLOW_LIST;
  const list: AllowList = typeof allow === "string" || !("hosts" in allow) ? parseAllowList(allow) : allow;
  const resolve = opts.resolve ?? systemResolver;
  // No keep-alive: every request gets a fresh connection, made through the guarded lookup.
  const agents = { "http:": new http.Agent({ keepAlive: false }), "https:": new https.Agent({ keepAlive: false }) };

  function staticRefusal(url: URL | null): string | null {
    if (!url) return "invalidUrl";
    if (url.protocol !== "http:" && url.protocol !== "https:") return "protocol";
    // An address the socket would take as a literal (and so never look up) must be one the policy can read.
    if (isIP(normalizeHost(url.hostname)) !== 0 && ipLiteral(url.hostname) === null) return "invalid";
    return literalRefusal(list, url.hostname);
  }

  /** The host's addresses, every one of them allowed; throws OutboundRefused or OutboundFailure. */
  async function resolveChecked(host: string): Promise<ResolvedAddress[]> {
    const refusal = literalRefusal(list, host);
    if (refusal !== null) throw new OutboundRefused(refusal);
    const literal = ipLiteral(host);
    if (literal !== null) return [{ address: literal, family: literal.includes(":") ? 6 : 4 }];
    let answer: ResolvedAddress[];
    try {
      answer = await resolve(normalizeHost(host));
    } catch (err) {
      throw new OutboundFailure("dns", err);
    }
    if (answer.length === 0) throw new OutboundFailure("dns");
    const bad = answer.find((a) => !mayConnect(list, host, a.address));
    if (bad) throw new OutboundRefused(refusedRange(bad.address) ?? "refused");
    return answer;
  }

  /** The socket's lookup: the checked answer, and nothing else, is what it connects to. */
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolveChecked(hostname).then(
      (answer) => {
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const usable = family === 0 ? answer : answer.filter((a) => a.family === family);
        const first = usable[0];
        if (!first) return callback(new OutboundFailure("dns"), "", 0);
        if (options.all) return callback(null, usable);
        return callback(null, first.address, first.family);
      },
      (err: Error) => callback(err, "", 0),
    );
  };

  /** A request to `url` whose every address is resolved (and checked) by `lookup`. */
  function request(url: URL, options: Pick<http.RequestOptions, "method" | "headers" | "agent" | "signal">): http.ClientRequest {
    const transport = url.protocol === "https:" ? https : http;
    return transport.request({
      protocol: url.protocol,
      host: normalizeHost(url.hostname),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      lookup,
      ...options,
    });
  }

  function send(url: URL, init: OutboundRequest): Promise<OutboundResponse> {
    const body = init.body === undefined ? undefined : Buffer.isBuffer(init.body) ? init.body : Buffer.from(init.body, "utf8");
    const limit = init.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    let req: http.ClientRequest;
    try {
      req = request(url, {
        method: init.method ?? "GET",
        headers: { ...init.headers, ...(body ? { "content-length": String(body.length) } : {}) },
        agent: agents[url.protocol as "http:" | "https:"],
      });
    } catch (err) {
      // A header Node refuses (bad characters): nothing was sent.
      return Promise.reject(new OutboundFailure("other", err));
    }
    return new Promise<OutboundResponse>((resolvePromise, reject) => {
      let settled = false;
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        outcome();
      };
      const fail = (err: unknown) =>
        finish(() => reject(err instanceof OutboundRefused || err instanceof OutboundFailure ? err : new OutboundFailure(failureKind(err), err)));
      const timer = setTimeout(() => fail(new OutboundFailure("timeout")), init.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      req.on("error", fail);
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          finish(() => {
            res.destroy();
            resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8").slice(0, limit) });
          });
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= limit) done();
        });
        res.on("end", done);
        res.on("error", fail);
        res.on("aborted", () => fail(new OutboundFailure("connection_reset")));
      });
      req.end(body);
    });
  }

  function openStream(url: URL, init: OutboundStreamRequest): Promise<OutboundStream> {
    return new Promise<OutboundStream>((resolvePromise, reject) => {
      let req: http.ClientRequest;
      try {
        req = request(url, {
          method: "GET",
          headers: init.headers ?? {},
          // With extra CAs, an agent of its own (the shared one trusts the system's only).
          agent: init.ca ? new https.Agent({ keepAlive: false, ca: init.ca }) : agents[url.protocol as "http:" | "https:"],
          ...(init.signal ? { signal: init.signal } : {}),
        });
      } catch (err) {
        reject(new OutboundFailure("other", err));
        return;
      }
      req.on("error", (err) => reject(err instanceof OutboundRefused || err instanceof OutboundFailure ? err : new OutboundFailure(failureKind(err), err)));
      req.on("response", (res) => resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: res }));
      req.end();
    });
  }

  return {
    refusalWithoutLookup: (url) => staticRefusal(parseUrl(url)),
    async stream(url, init = {}) {
      const u = parseUrl(url);
      const refusal = staticRefusal(u);
      if (refusal !== null) throw new OutboundRefused(refusal);
      return openStream(u!, init);
    },
    isListed(url) {
      const u = parseUrl(url);
      if (!u) return false;
      const ip = ipLiteral(u.hostname);
      return ip === null ? allowsHost(list, u.hostname) : allowsAddress(list, ip);
    },
    async check(url) {
      const u = parseUrl(url);
      const refusal = staticRefusal(u);
      if (refusal !== null) throw new OutboundRefused(refusal);
      await resolveChecked(u!.hostname);
    },
    async request(url, init = {}) {
      const u = parseUrl(url);
      const refusal = staticRefusal(u);
      // Literals never reach the lookup (the socket connects to them directly): checked here.
      if (refusal !== null) throw new OutboundRefused(refusal);
      return send(u!, init);
    },
  };
}
