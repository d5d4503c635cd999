// What request logs may show: the URL with credential-bearing query values replaced by
// [redacted], and never the Authorization or Cookie header.
import type { FastifyServerOptions } from "fastify";

const CREDENTIAL_PARAMS = /([?&](?:ticket|access_token|token)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(CREDENTIAL_PARAMS, "$1[redacted]");
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Fastify's request serializer (method, url, host, address), with the URL redacted and no headers. */
export function serializeRequest(req: LoggedRequest) {
  return { method: req.method, url: redactUrl(req.url ?? ""), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}

const REDACT_PATHS = ["req.headers.authorization", "req.headers.cookie", "headers.authorization", "headers.cookie", 'res.headers["set-cookie"]'];

/** The logger options with the redacting serializer added; false stays false. */
export function redactingLogger(logger: FastifyServerOptions["logger"]): FastifyServerOptions["logger"] {
  if (!logger) return false;
  const base = logger === true ? {} : logger;
  return {
    ...base,
    serializers: { ...base.serializers, req: serializeRequest as never },
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
  };
}
