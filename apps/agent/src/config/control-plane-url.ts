// Which control-plane URLs the agent will talk to. Commands are signed, but the enrolment
// token and the handshake travel in the clear over http://, so plain http is allowed only
// to this machine itself, or when the operator says --insecure.
import { isIPv4 } from "node:net";

export interface ControlPlaneUrl {
  /** Base URL for HTTP calls, without a trailing slash (a path prefix is kept). */
  http: string;
  /** The same base with ws:// or wss://. */
  ws: string;
}

export type UrlCheck = { ok: true; url: ControlPlaneUrl } | { ok: false; message: string };

export function checkControlPlaneUrl(raw: string, insecure: boolean): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: `control plane URL "${raw}" is not a URL` };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, message: `control plane URL must start with https:// (got ${url.protocol}//)` };
  }
  if (url.username !== "" || url.password !== "") {
    return { ok: false, message: "control plane URL must not carry a user name or password" };
  }
  if (url.search !== "" || url.hash !== "") {
    return { ok: false, message: "control plane URL must not carry a query or a fragment" };
  }
  if (url.protocol === "http:" && !insecure && !isLoopbackHost(url.hostname)) {
    return {
      ok: false,
      message: `refusing http:// to ${url.hostname}, which is not this machine: use https:// (or --insecure, for tests only)`,
    };
  }
  const base = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  return { ok: true, url: { http: base, ws: base.replace(/^http/, "ws") } };
}

/** localhost, 127.0.0.0/8 or ::1: traffic that never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  if (host.toLowerCase() === "localhost") return true;
  if (isIPv4(host)) return host.split(".")[0] === "127";
  // WHATWG URL parsing has already compressed any spelling of ::1 to "::1".
  return host === "::1";
}

/** The WebSocket URL the link dials. */
export function connectUrl(base: ControlPlaneUrl, connectPath: string): string {
  return `${base.ws}${connectPath.startsWith("/") ? "" : "/"}${connectPath}`;
}
