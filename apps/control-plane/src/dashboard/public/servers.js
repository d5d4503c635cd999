// The capacity view: one card per server (server-card.js), updated in place from
// `server.stats` and `server.status` events. Updates are keyed by server id and applied once per
// animation frame, so hundreds of servers reporting every few seconds cost a few text changes
// each, never a re-render. History (the last hour) is fetched only for cards that are on screen
// (server-history.js) and opens as a chart (server-history-chart.js).
import { client, ok } from "./api.js";
import { field, h } from "./dom.js";
import { buildCard, capacityOf, paintProxy, paintSeen, paintStats, paintStatus } from "./server-card.js";
import { historyChart } from "./server-history-chart.js";
import { addSample, historyLoader } from "./server-history.js";

/** No sample for this long: shown offline. */
const SILENT_MS = 60_000;

/** The organisation's servers with their capacity (for the capacity view and the new project form). */
export const listServers = (orgId) => ok(client.GET("/organizations/{organization_id}/servers", { params: { path: { organization_id: orgId } } }));

let prefetched = null;
/** Starts loading the capacity list before the page is shown (while /me is in flight). */
export function prefetchServers(orgId) {
  const promise = listServers(orgId);
  promise.catch(() => {});
  prefetched = { orgId, at: Date.now(), promise };
}
function serversOf(orgId) {
  const p = prefetched;
  prefetched = null;
  return p && p.orgId === orgId && Date.now() - p.at < 5000 ? p.promise : listServers(orgId);
}

export async function serversPage(main, ctx) {
  const orgId = ctx.org?.id;
  if (!orgId) {
    main.append(h("h1", {}, "Servers"), h("p", {}, "You are not a member of any organisation."));
    return;
  }
  const summary = h("p", { class: "summary" });
  const sort = h("select", { id: "server-sort" }, h("option", { value: "name" }, "Name"), h("option", { value: "room" }, "Most room first"));
  const grid = h("ul", { class: "server-grid", "aria-label": "Servers", "aria-busy": "true" });
  main.append(
    h(
      "div",
      { class: "page-head" },
      h("h1", {}, "Servers"),
      h("div", { class: "toolbar" }, field("Sort by", sort), ctx.can("org.servers.manage") ? h("a", { class: "button", href: "#/servers/new" }, "Add a server") : null),
    ),
    summary,
    grid,
  );

  performance.mark("servers:fetch");
  const res = await serversOf(orgId);
  if (!ctx.current()) return;
  performance.mark("servers:data");
  const def = res.default_environment;
  const cards = new Map();
  const pending = new Map();
  let frame = 0;

  // ---- cards --------------------------------------------------------------------------
  function renderGrid() {
    const list = [...cards.values()];
    if (sort.value === "room") {
      const rank = (c) => (c.s.status === "online" ? capacityOf(c.s, def).fits : -1);
      list.sort((a, b) => rank(b) - rank(a) || a.s.name.localeCompare(b.s.name));
    }
    grid.replaceChildren(...list.map((c) => c.li));
    grid.setAttribute("aria-busy", "false");
  }

  function renderSummary() {
    let online = 0;
    let withRoom = 0;
    for (const c of cards.values()) {
      if (c.s.status === "online") online++;
      if (c.li.dataset.room === "room") withRoom++;
    }
    summary.textContent = `${cards.size} server${cards.size === 1 ? "" : "s"} · ${online} online · ${withRoom} with room for a new environment`;
  }

  for (const s of res.data) cards.set(s.id, buildCard(s, def));
  renderGrid();
  renderSummary();
  if (cards.size === 0) grid.append(h("li", { class: "empty" }, "No servers yet.", ctx.can("org.servers.manage") ? [" ", h("a", { href: "#/servers/new" }, "Add your first server")] : null));
  main.dataset.serversReady = String(cards.size);
  performance.mark("servers:rendered");
  sort.addEventListener("change", renderGrid);

  // ---- history (lazy), and its chart in a dialog ----------------------------------------
  const wantHistory = historyLoader(ctx, orgId);
  const chart = historyChart(main, ctx, wantHistory);
  grid.addEventListener("click", (ev) => {
    const button = ev.target instanceof Element ? ev.target.closest(".history-button") : null;
    const card = button && cards.get(button.closest("li")?.dataset.serverId ?? "");
    if (card) void chart.open(card);
  });
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const card = cards.get(e.target.dataset.serverId);
      if (!card) continue;
      card.visible = e.isIntersecting;
      if (e.isIntersecting) wantHistory(card);
    }
  });
  for (const c of cards.values()) observer.observe(c.li);
  ctx.onCleanup(() => observer.disconnect());

  // ---- live updates, batched per frame ------------------------------------------------
  function schedule() {
    if (!frame) frame = requestAnimationFrame(flush);
  }
  function flush() {
    frame = 0;
    if (!ctx.current()) return;
    let statusChanged = false;
    for (const [id, ev] of pending) {
      const card = cards.get(id);
      if (!card) continue;
      const s = card.s;
      if (ev.stats) {
        const d = ev.stats;
        s.stats = { ...d, sampled_at: d.ts };
        s.last_seen_at = d.ts;
        if (s.status !== "online") {
          s.status = "online";
          statusChanged = true;
        }
        paintStats(card);
        if (addSample(card, d)) chart.refresh(card);
      }
      if (ev.status && ev.status !== s.status) {
        s.status = ev.status;
        statusChanged = true;
      }
      paintStatus(card, def);
    }
    pending.clear();
    renderSummary();
    if (statusChanged) ctx.announce("A server's status changed.");
  }
  ctx.on("server.stats", (d) => {
    const p = pending.get(d.server_id) ?? {};
    p.stats = d;
    pending.set(d.server_id, p);
    schedule();
  });
  ctx.on("server.proxy", (d) => {
    const card = cards.get(d.server_id);
    if (!card) return;
    const { server_id: _id, ...proxy } = d;
    card.s.proxy = proxy;
    paintProxy(card);
  });
  ctx.on("server.status", (d) => {
    if (!cards.has(d.server_id)) {
      // A server added elsewhere: load it (rare, so a fetch of the list is fine).
      listServers(orgId)
        .then((r) => {
          if (!ctx.current()) return;
          for (const s of r.data) {
            if (cards.has(s.id)) continue;
            const card = buildCard(s, def);
            cards.set(s.id, card);
            observer.observe(card.li);
          }
          renderGrid();
          renderSummary();
        })
        .catch(ctx.showError);
      return;
    }
    const p = pending.get(d.server_id) ?? {};
    p.status = d.status;
    pending.set(d.server_id, p);
    schedule();
  });
  // "Last seen … ago" moves on by itself; an agent silent for long enough is shown as such.
  const ticker = setInterval(() => {
    const now = Date.now();
    let changed = false;
    for (const c of cards.values()) {
      // Agents report every few seconds: a minute of silence means the link is gone,
      // even if no status change has reached us (e.g. the replica holding it died).
      if (c.s.status === "online" && c.s.last_seen_at && now - Date.parse(c.s.last_seen_at) > SILENT_MS) {
        c.s.status = "offline";
        changed = true;
        paintStatus(c, def);
      } else if (c.visible) paintSeen(c);
    }
    if (changed) renderSummary();
  }, 5000);
  ctx.onCleanup(() => clearInterval(ticker));
  ctx.onCleanup(() => frame && cancelAnimationFrame(frame));
}
