// Folds the agents' proxy.state reports into the server's proxy and its environments'
// routes, inside the ingest transaction, and tells the organisation's live stream what
// changed (server.proxy, environment.routing). A report is the whole set of the server's
// routes, so only a batch's last one counts. The writes are routing.repo.ts's.
import type { Event, ProxyStateEvent } from "@berth/protocol";
import type { EventApplier } from "../agents/event-ingest.ts";
import { appendOrgEvents, type OrgEvent } from "../events/event-log.repo.ts";
import { certificateView, proxyView } from "./routing-view.ts";
import { storeProxy, storeRoutes } from "./routing.repo.ts";

const isProxyState = (e: Event): e is ProxyStateEvent => e.kind === "proxy.state";

/** Resolves with how many routes named an environment that is not on the sender's server (not applied). */
export const applyProxyState: EventApplier = async (client, serverId, fresh, organizationId) => {
  const report = fresh.filter(isProxyState).at(-1);
  if (!report) return 0;
  const proxy = { running: report.running, image: report.image, public_addresses: report.public_addresses, error: report.error, checked_at: report.ts };
  const events: OrgEvent[] = [];
  if (await storeProxy(client, serverId, proxy)) events.push({ organizationId, type: "server.proxy", data: { server_id: serverId, ...proxyView(proxy) } });
  const { changes, foreign } = await storeRoutes(
    client,
    serverId,
    report.routes.map((r) => ({ environment_id: r.environment_id, routing: { mode: r.mode, domains: r.domains, checked_at: report.ts } })),
  );
  for (const c of changes) {
    if (!c.changed) continue;
    events.push({
      organizationId,
      type: "environment.routing",
      data: { environment_id: c.environment_id, project_id: c.project_id, mode: c.routing?.mode ?? null, certificate: certificateView(c.routing), routing: c.routing },
    });
  }
  await appendOrgEvents(client, events);
  return foreign;
};
