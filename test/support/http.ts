// Small helpers to call the APIs through app.inject, and a raw request to a listening server.
import http from "node:http";
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

/** A raw HTTP request to a listening server (tus and multipart uploads, headers as sent): its status, headers and body text. */
export function rawRequest(method: string, url: string, headers: Record<string, string | number>, body?: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString() }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
