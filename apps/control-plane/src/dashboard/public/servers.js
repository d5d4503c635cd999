// The capacity view: one card per server, updated in place from `server.stats` and
// `server.status` events. Updates are keyed by server id and applied once per animation
// frame, so hundreds of servers reporting every few seconds cost a few text changes each,
// never a re-render. History (the last hour) is fetched only for cards that are on screen.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit } from "./dom.js";

const HOUR_MS = 60 * 60 * 1000;
const HISTORY_CONCURRENCY = 4;
/** No sample for this long: shown offline. */
const SILENT_MS = 60_000;

const STATUS_LABEL = { online: "Online", offline: "Offline", pending: "Not connected yet" };

function capacityOf(s, def) {
  const live = s.stats;
  const totalRam = live ? live.ram_total_mb : s.ram_mb;
  const totalDisk = live ? live.disk_total_gb : s.disk_gb;
  if (s.cpu_cores <= 0 || totalRam <= 0 || totalDisk <= 0) return { fits: 0, room: "unknown", freeRam: 0, freeDisk: 0, freeCpu: 0 };
  const a = s.allocated;
  const freeCpu = Math.max(0, s.cpu_cores - a.cpu_cores);
  const freeRam = Math.max(0, Math.min(totalRam - a.ram_mb, live ? live.ram_total_mb - live.ram_used_mb : Infinity));
  const freeDisk = Math.max(0, Math.min(totalDisk - a.disk_gb, live ? live.disk_total_gb - live.disk_used_gb : Infinity));
  const fits = Math.max(0, Math.min(Math.floor(freeCpu / def.cpu_cores), Math.floor(freeRam / def.ram_mb), Math.floor(freeDisk / def.disk_gb)));
  return { fits, room: fits > 0 ? "room" : "full", freeRam, freeDisk, freeCpu };
}

function roomText(s, cap) {
  if (s.status === "pending") return ["unknown", "Waiting for its agent"];
  if (s.status !== "online") return ["offline", "Offline: no new environments"];
  if (cap.room === "unknown") return ["unknown", "Size not known yet"];
  if (cap.fits === 0) return ["full", "Full"];
  return ["room", `Room for ${cap.fits} more environment${cap.fits === 1 ? "" : "s"}`];
}

// One card's markup, cloned per server: far cheaper than building 500 cards node by node.
// Static markup only; every value from the API goes in through textContent.
const metric = (label, bar) =>
  `<div class="metric"><span class="metric-label">${label}</span>${bar ? '<span class="bar" aria-hidden="true"><span class="bar-fill"></span></span>' : '<span class="bar-spacer"></span>'}<span class="metric-value metric-${label.toLowerCase()}"></span></div>`;
const CARD = document.createElement("template");
CARD.innerHTML = `<li class="server-card"><div class="card-head"><h2></h2><span class="badge"></span></div><span class="room"></span>
<div class="card-sub"><span class="seen"></span><span class="agent"></span></div>
<div class="metrics">${metric("CPU", true)}${metric("RAM", true)}${metric("Disk", true)}${metric("Load", false)}${metric("Containers", false)}</div>
<p class="envs"></p><p class="proxy"></p><div class="spark-row"><canvas class="spark" width="240" height="40" aria-hidden="true"></canvas><button type="button" class="secondary small history-button">History<span class="visually-hidden"></span></button></div></li>`;

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function setClass(el, cls) {
  if (el.className !== cls) el.className = cls;
}

function setBar(bar, ratio) {
  const r = Math.max(0, Math.min(1, ratio));
  // A transform, not a width: changing it needs no layout, only the compositor.
  bar.style.transform = `scaleX(${r.toFixed(3)})`;
  setClass(bar, r >= 0.9 ? "bar-fill high" : r >= 0.7 ? "bar-fill mid" : "bar-fill");
}

function drawSpark(canvas, points) {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const w = canvas.width;
  const hgt = canvas.height;
  ctx.clearRect(0, 0, w, hgt);
  if (points.length < 2) return;
  const end = Date.now();
  const start = end - HOUR_MS;
  ctx.strokeStyle = "#2563eb";
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let first = true;
  for (const p of points) {
    const x = ((p.t - start) / HOUR_MS) * w;
    const y = hgt - 2 - (p.cpu / 100) * (hgt - 4);
    if (first) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
    first = false;
  }
  ctx.stroke();
}

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

let uplot = null;
/** uPlot (served from node_modules by the control plane) is loaded the first time a chart opens. */
function loadUplot() {
  uplot ??= new Promise((resolve, reject) => {
    document.head.append(h("link", { rel: "stylesheet", href: "/assets/uPlot.min.css" }));
    const script = h("script", { src: "/assets/uPlot.iife.min.js" });
    script.addEventListener("load", () => resolve(window.uPlot));
    script.addEventListener("error", () => {
      uplot = null;
      reject(new Error("The chart library did not load."));
    });
    document.head.append(script);
  });
  return uplot;
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
  let dialogCard = null;
  let chart = null;

  // ---- cards --------------------------------------------------------------------------
  function buildCard(s) {
    const li = CARD.content.firstElementChild.cloneNode(true);
    const q = (sel) => li.querySelector(sel);
    li.dataset.serverId = s.id;
    q("h2").textContent = s.name;
    if (s.agent_version) q(".agent").textContent = ` · agent ${s.agent_version}`;
    q(".history-button .visually-hidden").textContent = ` of ${s.name}`;
    const m = (name) => ({ bar: q(`.metric-${name}`).previousElementSibling.firstElementChild, value: q(`.metric-${name}`) });
    const card = {
      s,
      li,
      status: q(".badge"),
      room: q(".room"),
      seen: q(".seen"),
      cpu: m("cpu"),
      ram: m("ram"),
      disk: m("disk"),
      load: q(".metric-load"),
      containers: q(".metric-containers"),
      envs: q(".envs"),
      proxy: q(".proxy"),
      spark: q(".spark"),
      history: null,
      loading: false,
      visible: false,
    };
    paintAll(card);
    return card;
  }

  function paintStatus(card) {
    const s = card.s;
    setText(card.status, STATUS_LABEL[s.status] ?? s.status);
    setClass(card.status, `badge badge-${s.status}`);
    setText(card.seen, s.last_seen_at ? `Last seen ${fmt.ago(s.last_seen_at)}` : "Never seen");
    const [cls, text] = roomText(s, capacityOf(s, def));
    setText(card.room, text);
    setClass(card.room, `room room-${cls}`);
    if (card.li.dataset.room !== cls) card.li.dataset.room = cls;
  }

  function paintStats(card) {
    const st = card.s.stats;
    if (!st) {
      for (const m of [card.cpu, card.ram, card.disk]) {
        m.value.textContent = "no figures yet";
        setBar(m.bar, 0);
      }
      setText(card.load, "–");
      setText(card.containers, "–");
      return;
    }
    card.li.dataset.sampledAt = st.sampled_at;
    setText(card.cpu.value, fmt.pct(st.cpu_percent));
    setBar(card.cpu.bar, st.cpu_percent / 100);
    setText(card.ram.value, `${fmt.gbFromMb(st.ram_used_mb)} / ${fmt.gbFromMb(st.ram_total_mb)} GB`);
    setBar(card.ram.bar, st.ram_total_mb ? st.ram_used_mb / st.ram_total_mb : 0);
    setText(card.disk.value, `${fmt.gb(st.disk_used_gb)} / ${fmt.gb(st.disk_total_gb)} GB`);
    setBar(card.disk.bar, st.disk_total_gb ? st.disk_used_gb / st.disk_total_gb : 0);
    setText(card.load, `${fmt.load(st.load1)} ${fmt.load(st.load5)} ${fmt.load(st.load15)}`);
    setText(card.containers, `${st.containers_running} of ${st.containers_total} running`);
  }

  function paintEnvs(card) {
    const s = card.s;
    const names = s.environments.map((e) => `${e.project_name}/${e.name} (${e.status})`);
    const others = s.environment_count - s.environments.length;
    if (others > 0) names.push(`${others} in other projects`);
    setText(card.envs, s.environment_count === 0 ? "No environments" : `${s.environment_count} environment${s.environment_count === 1 ? "" : "s"}: ${names.join(", ")}`);
  }

  /** The server's reverse proxy as its agent last reported it: running or why not, and the addresses domains must point to. */
  function paintProxy(card) {
    const p = card.s.proxy;
    const text = !p
      ? "Proxy: not reported yet"
      : p.running
        ? `Proxy: running${p.image ? ` (${p.image})` : ""}${p.public_addresses.length ? ` · point domains to ${p.public_addresses.join(", ")}` : ""}`
        : `Proxy: down${p.error ? ` – ${p.error}` : ""}`;
    setText(card.proxy, text);
    setClass(card.proxy, `proxy${p && !p.running ? " proxy-down" : ""}`);
  }

  function paintAll(card) {
    paintStatus(card);
    paintStats(card);
    paintEnvs(card);
    paintProxy(card);
  }

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

  for (const s of res.data) cards.set(s.id, buildCard(s));
  renderGrid();
  renderSummary();
  if (cards.size === 0) grid.append(h("li", { class: "empty" }, "No servers yet.", ctx.can("org.servers.manage") ? [" ", h("a", { href: "#/servers/new" }, "Add your first server")] : null));
  main.dataset.serversReady = String(cards.size);
  performance.mark("servers:rendered");
  sort.addEventListener("change", renderGrid);
  grid.addEventListener("click", (ev) => {
    const button = ev.target instanceof Element ? ev.target.closest(".history-button") : null;
    const card = button && cards.get(button.closest("li")?.dataset.serverId ?? "");
    if (card) void openHistory(card);
  });

  // ---- history (lazy) -----------------------------------------------------------------
  const queue = [];
  let inFlight = 0;
  function wantHistory(card) {
    if (card.history || card.loading) return;
    card.loading = true;
    queue.push(card);
    pump();
  }
  function pump() {
    while (inFlight < HISTORY_CONCURRENCY && queue.length > 0) {
      const card = queue.shift();
      inFlight++;
      ok(client.GET("/organizations/{organization_id}/servers/{server_id}/stats", { params: { path: { organization_id: orgId, server_id: card.s.id }, query: { minutes: 60 } } }))
        .then((r) => {
          card.history = r.points.map((p) => ({ t: Date.parse(p.ts), cpu: p.cpu_percent, ram: p.ram_total_mb ? (100 * p.ram_used_mb) / p.ram_total_mb : 0, disk: p.disk_total_gb ? (100 * p.disk_used_gb) / p.disk_total_gb : 0 }));
          if (ctx.current()) drawSpark(card.spark, card.history);
        })
        .catch(() => {
          card.loading = false;
        })
        .finally(() => {
          inFlight--;
          if (ctx.current()) pump();
        });
    }
  }
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
        if (card.history) {
          const t = Date.parse(d.ts);
          card.history.push({ t, cpu: d.cpu_percent, ram: d.ram_total_mb ? (100 * d.ram_used_mb) / d.ram_total_mb : 0, disk: d.disk_total_gb ? (100 * d.disk_used_gb) / d.disk_total_gb : 0 });
          while (card.history.length > 0 && card.history[0].t < t - HOUR_MS) card.history.shift();
          if (card.visible) drawSpark(card.spark, card.history);
          if (dialogCard === card) updateChart();
        }
      }
      if (ev.status && ev.status !== s.status) {
        s.status = ev.status;
        statusChanged = true;
      }
      paintStatus(card);
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
            const card = buildCard(s);
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
        paintStatus(c);
      } else if (c.visible) setText(c.seen, c.s.last_seen_at ? `Last seen ${fmt.ago(c.s.last_seen_at)}` : "Never seen");
    }
    if (changed) renderSummary();
  }, 5000);
  ctx.onCleanup(() => clearInterval(ticker));
  ctx.onCleanup(() => frame && cancelAnimationFrame(frame));

  // ---- history dialog (uPlot) ---------------------------------------------------------
  const dialogTitle = h("h2", { id: "history-title" });
  const chartBox = h("div", { class: "chart" });
  const dialog = h(
    "dialog",
    { class: "history", "aria-labelledby": "history-title" },
    dialogTitle,
    h("p", { class: "hint" }, "CPU, RAM and disk use in percent over the last hour; new samples are added as they arrive."),
    chartBox,
    h("div", { class: "actions" }, h("button", { type: "button", onclick: () => dialog.close() }, "Close")),
  );
  dialog.addEventListener("close", () => {
    dialogCard = null;
    chart?.destroy();
    chart = null;
  });
  main.append(dialog);
  ctx.onCleanup(() => dialog.open && dialog.close());

  function chartData(points) {
    return [points.map((p) => p.t / 1000), points.map((p) => p.cpu), points.map((p) => p.ram), points.map((p) => p.disk)];
  }
  function updateChart() {
    if (chart && dialogCard?.history) chart.setData(chartData(dialogCard.history));
  }
  async function openHistory(card) {
    dialogCard = card;
    dialogTitle.textContent = `${card.s.name}: the last hour`;
    clear(chartBox).append(h("p", {}, "Loading…"));
    dialog.showModal();
    if (!card.history) {
      card.loading = false;
      wantHistory(card);
      while (!card.history && dialogCard === card) await new Promise((r) => setTimeout(r, 100));
    }
    if (dialogCard !== card) return;
    clear(chartBox);
    if (card.history.length === 0) {
      chartBox.append(h("p", {}, "No figures in the last hour."));
      return;
    }
    const UPlot = await loadUplot().catch(() => null);
    if (dialogCard !== card) return;
    if (!UPlot) {
      chartBox.append(h("p", {}, "The chart library did not load."));
      return;
    }
    chart = new UPlot(
      {
        width: Math.min(720, window.innerWidth - 80),
        height: 260,
        scales: { y: { range: [0, 100] } },
        axes: [{}, { label: "%" }],
        series: [{}, { label: "CPU %", stroke: "#2563eb", width: 1.5 }, { label: "RAM %", stroke: "#16a34a", width: 1.5 }, { label: "Disk %", stroke: "#9333ea", width: 1.5 }],
      },
      chartData(card.history),
      chartBox,
    );
  }
}

export async function addServerPage(main, ctx) {
  const orgId = ctx.org?.id;
  main.append(h("h1", {}, "Add a server"));
  if (!orgId || !ctx.can("org.servers.manage")) {
    main.append(h("p", {}, "You don't have permission to manage servers in this organisation."));
    return;
  }
  const name = h("input", { type: "text", name: "name", required: true, maxlength: 100, autocomplete: "off" });
  const submit = h("button", { type: "submit" }, "Create server and install command");
  const result = h("section", { class: "install", "aria-label": "Install command" });
  const form = h(
    "form",
    {
      class: "card",
      onsubmit: onSubmit(submit, ctx.showError, async () => {
        const out = await ok(client.POST("/organizations/{organization_id}/servers", { params: { path: { organization_id: orgId } }, body: { name: name.value } }));
        showInstall(out);
      }),
    },
    h("p", {}, "Give the server a name; you get a one-line command that installs the agent and connects it to this organisation."),
    field("Server name", name, "e.g. web-1 or the host name"),
    h("div", { class: "actions" }, submit),
  );
  main.append(form, result);
  name.focus();

  function showInstall(out) {
    const code = h("code", { id: "install-command" }, out.install_command);
    const copy = h(
      "button",
      {
        type: "button",
        class: "secondary",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(out.install_command);
            ctx.announce("Install command copied.");
            copy.textContent = "Copied";
          } catch {
            const range = document.createRange();
            range.selectNodeContents(code);
            getSelection()?.removeAllRanges();
            getSelection()?.addRange(range);
            ctx.announce("Install command selected; press Ctrl+C to copy it.");
          }
        },
      },
      "Copy command",
    );
    const status = h("p", { class: "agent-wait", role: "status", id: "agent-state" }, badge("pending", "Waiting"), " Waiting for the agent to connect…");
    clear(result).append(
      h("h2", {}, `Install the agent on ${out.server.name}`),
      h("p", {}, "On the server (Debian or Ubuntu with Docker), run as root:"),
      h("pre", { class: "command" }, code),
      h("div", { class: "actions" }, copy),
      h("p", { class: "hint" }, `The enrolment token in this command works once and expires ${fmt.time(out.enrollment.expires_at)}. It is not shown again.`),
      status,
    );
    form.hidden = true;
    copy.focus();
    ctx.on("server.status", (d) => {
      if (d.server_id !== out.server.id) return;
      if (d.status === "online") {
        clear(status).append(badge("online", "Online"), ` ${out.server.name} is connected. `, h("a", { href: "#/servers" }, "See it with the other servers"));
        ctx.announce(`${out.server.name} is online.`);
      } else if (d.status === "offline") {
        clear(status).append(badge("offline", "Enrolled"), " The agent has enrolled; waiting for its live link…");
      }
    });
  }
}
