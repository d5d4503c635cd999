// Small helpers to call the public API with an API key through app.inject.
import type { App } from "@berth/control-plane";

export interface Res {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export function publicClient(app: App, key: string | null, extraHeaders: Record<string, string> = {}, prefix = "/api/public/v1") {
  async function call(method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Res> {
    const res = await app.inject({
      method,
      url: `${prefix}${path}`,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extraHeaders, ...headers },
      ...(payload !== undefined ? { payload: payload as object } : {}),
    });
    let body: unknown = res.body;
    if (res.headers["content-type"]?.toString().includes("json") && res.body) body = JSON.parse(res.body);
    return { status: res.statusCode, headers: res.headers, body };
  }
  return {
    get: (path: string, headers?: Record<string, string>) => call("GET", path, undefined, headers),
    post: (path: string, payload?: unknown, headers?: Record<string, string>) => call("POST", path, payload, headers),
    put: (path: string, payload?: unknown, headers?: Record<string, string>) => call("PUT", path, payload, headers),
    patch: (path: string, payload?: unknown, headers?: Record<string, string>) => call("PATCH", path, payload, headers),
    delete: (path: string, headers?: Record<string, string>) => call("DELETE", path, undefined, headers),
  };
}

/** The platform API (/api/v1) with a person's session token. */
export function platformClient(app: App, token: string | null, extraHeaders: Record<string, string> = {}) {
  return publicClient(app, token, extraHeaders, "/api/v1");
}
