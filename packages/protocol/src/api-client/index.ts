// The typed client of Berth's two HTTP APIs, for the CLI, the dashboard and scripts: the
// paths, parameters, bodies and answers are generated from the OpenAPI documents
// (generated/, checked against the running API by test/docs/api-client.test.ts), the
// requests are made by openapi-fetch. A failed call is one BerthApiError with the API's
// own code and message, so callers never parse error bodies themselves.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths as PlatformPaths } from "./generated/platform-api.ts";
import type { paths as PublicPaths } from "./generated/public-api.ts";

export type { PlatformPaths, PublicPaths };
export type { components as PlatformComponents, operations as PlatformOperations } from "./generated/platform-api.ts";
export type { components as PublicComponents, operations as PublicOperations } from "./generated/public-api.ts";

/** Where each API lives below the control plane's URL. */
export const API_PREFIX = { platform: "/api/v1", public: "/api/public/v1" } as const;

export interface ClientOptions {
  /** The control plane, e.g. https://berth.example.com (no API prefix). */
  url: string;
  /** A session token (bst_…) for the platform API or an API key (svc_live_…) for the public one. */
  token?: string | (() => string | null | undefined);
  fetch?: typeof globalThis.fetch;
  /** Sent on every request, e.g. a user agent. */
  headers?: Record<string, string>;
}

/** An answer that is not a success, in the API's words: `{error, message}` and its request id. */
export class BerthApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    readonly details?: { path: string; message: string }[],
  ) {
    super(message);
    this.name = "BerthApiError";
  }

  /** From a failed response and its parsed body (null when it had none or was not JSON). */
  static from(response: Response, body: unknown): BerthApiError {
    const b = (body && typeof body === "object" ? body : {}) as { error?: unknown; message?: unknown; request_id?: unknown; details?: unknown };
    return new BerthApiError(
      response.status,
      typeof b.error === "string" ? b.error : `http_${response.status}`,
      typeof b.message === "string" ? b.message : `The request failed (HTTP ${response.status}).`,
      typeof b.request_id === "string" ? b.request_id : (response.headers.get("x-request-id") ?? undefined),
      Array.isArray(b.details) ? (b.details as { path: string; message: string }[]) : undefined,
    );
  }
}

function authorization(token: ClientOptions["token"]): Middleware {
  return {
    onRequest({ request }) {
      const t = typeof token === "function" ? token() : token;
      if (t) request.headers.set("authorization", `Bearer ${t}`);
      return request;
    },
  };
}

function build<Paths extends object>(prefix: string, opts: ClientOptions): Client<Paths> {
  const client = createClient<Paths>({
    baseUrl: opts.url.replace(/\/+$/, "") + prefix,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    headers: { accept: "application/json", ...opts.headers },
  });
  client.use(authorization(opts.token));
  return client;
}

export const platformClient = (opts: ClientOptions): Client<PlatformPaths> => build<PlatformPaths>(API_PREFIX.platform, opts);
export const publicClient = (opts: ClientOptions): Client<PublicPaths> => build<PublicPaths>(API_PREFIX.public, opts);

/**
 * The data of a call, or its failure thrown as a BerthApiError:
 * `const project = await ok(client.GET("/projects/{id}", { params: { path: { id } } }))`.
 */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw BerthApiError.from(response, error);
  return data as T;
}
