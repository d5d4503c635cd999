// Talks to the platform API (/api/v1) with the session token kept in sessionStorage.
// Every failure becomes an ApiError whose message is the API's own words, never a stack.
const TOKEN_KEY = "berth.session";

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};
export function whenSignedOut(fn) {
  onUnauthorized = fn;
}

export async function api(method, path, body) {
  const headers = { accept: "application/json" };
  const token = session.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let res;
  // A read that met a network blip (the browser aborts requests in flight when the network
  // changes) is tried once more; a write is not, as it may have arrived.
  for (let attempt = 0; ; attempt++) {
    try {
      res = await fetch(`/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      break;
    } catch {
      if (method !== "GET" || attempt > 0) throw new ApiError(0, "network", "The control plane cannot be reached. Check the connection and try again.");
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
  if (res.status === 204) return null;
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const message = data && typeof data.message === "string" ? data.message : `The request failed (HTTP ${res.status}).`;
    if (res.status === 401 && path !== "/auth/login") onUnauthorized();
    throw new ApiError(res.status, data?.error ?? "error", message);
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body ?? {});
export const del = (path) => api("DELETE", path);

/**
 * The live event stream of one organisation. EventSource cannot send headers, and a session
 * token in a URL ends up in logs: each open fetches a single-use ticket (valid a minute) and
 * puts that in the URL instead. A ticket opens one stream, so the caller reconnects through
 * here too (with the last event id, to resume where the stream stopped).
 */
export async function eventStream(orgId, lastEventId) {
  const { ticket } = await post("/events/tickets", { organization_id: orgId });
  const q = new URLSearchParams({ organization_id: orgId, ticket });
  if (lastEventId) q.set("last_event_id", lastEventId);
  return new EventSource(`/api/v1/events?${q}`);
}
