// Talks to the platform API (/api/v1) with the session token kept in sessionStorage, through
// one openapi-fetch client: every call names its path as the API documents it, with its
// parameters (`client.GET("/organizations/{organization_id}/projects", { params: { path: { organization_id } } })`),
// and test/dashboard/api-paths.test.ts fails when a path is not in the platform API's
// generated paths. `ok` turns an answer into its data, or a failure into an ApiError whose
// message is the API's own words, never a stack.
import createClient from "./vendor/openapi-fetch.js";

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
  /** `details`: the API's per-field problems of a refused value, e.g. { path: "body/ram_mb", message }. */
  constructor(status, code, message, details = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

let onUnauthorized = () => {};
export function whenSignedOut(fn) {
  onUnauthorized = fn;
}

/**
 * A read that met a network blip (the browser aborts requests in flight when the network
 * changes) is tried once more; a write is not, as it may have arrived.
 */
async function fetchWithRetry(request) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(request);
    } catch {
      if (request.method !== "GET" || attempt > 0) throw new ApiError(0, "network", "The control plane cannot be reached. Check the connection and try again.");
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}

export const client = createClient({ baseUrl: "/api/v1", fetch: fetchWithRetry, headers: { accept: "application/json" } });
client.use({
  onRequest({ request }) {
    const token = session.token;
    if (token) request.headers.set("authorization", `Bearer ${token}`);
    return request;
  },
  onResponse({ response, schemaPath }) {
    // A wrong password is a 401 too, and is not a lost session.
    if (response.status === 401 && schemaPath !== "/auth/login") onUnauthorized();
  },
});

/** The data of a call (null when the answer has none, e.g. 204), or its failure thrown as an ApiError. */
export async function ok(call) {
  const { data, error, response } = await call;
  if (!response.ok) {
    const body = error && typeof error === "object" ? error : {};
    const message = typeof body.message === "string" ? body.message : `The request failed (HTTP ${response.status}).`;
    throw new ApiError(response.status, typeof body.error === "string" ? body.error : "error", message, Array.isArray(body.details) ? body.details : []);
  }
  return data ?? null;
}

/**
 * The live event stream of one organisation. EventSource cannot send headers, and a session
 * token in a URL ends up in logs: each open fetches a single-use ticket (valid a minute) and
 * puts that in the URL instead. A ticket opens one stream, so the caller reconnects through
 * here too (with the last event id, to resume where the stream stopped).
 */
export async function eventStream(orgId, lastEventId) {
  const { ticket } = await ok(client.POST("/events/tickets", { body: { organization_id: orgId } }));
  const q = new URLSearchParams({ organization_id: orgId, ticket });
  if (lastEventId) q.set("last_event_id", lastEventId);
  return new EventSource(`/api/v1/events?${q}`);
}
