// One server's card in the capacity view: its markup (cloned per server) and how each part of
// it is painted from the server's record. Painting only touches what changed, so a live update
// costs a few text changes, never a re-render.
import { fmt } from "./dom.js";

const STATUS_LABEL = { online: "Online", offline: "Offline", pending: "Not connected yet" };

/** How many environments of the default size still fit on the server, and what is free. */
export function capacityOf(s, def) {
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

/** A card for server `s`, painted; `def` is the default environment's size (for the room it has). */
export function buildCard(s, def) {
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
  paintStatus(card, def);
  paintStats(card);
  paintEnvs(card);
  paintProxy(card);
  return card;
}

/** "Last seen … ago", which moves on by itself. */
export function paintSeen(card) {
  setText(card.seen, card.s.last_seen_at ? `Last seen ${fmt.ago(card.s.last_seen_at)}` : "Never seen");
}

export function paintStatus(card, def) {
  const s = card.s;
  setText(card.status, STATUS_LABEL[s.status] ?? s.status);
  setClass(card.status, `badge badge-${s.status}`);
  paintSeen(card);
  const [cls, text] = roomText(s, capacityOf(s, def));
  setText(card.room, text);
  setClass(card.room, `room room-${cls}`);
  if (card.li.dataset.room !== cls) card.li.dataset.room = cls;
}

export function paintStats(card) {
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
export function paintProxy(card) {
  const p = card.s.proxy;
  const text = !p
    ? "Proxy: not reported yet"
    : p.running
      ? `Proxy: running${p.image ? ` (${p.image})` : ""}${p.public_addresses.length ? ` · point domains to ${p.public_addresses.join(", ")}` : ""}`
      : `Proxy: down${p.error ? ` – ${p.error}` : ""}`;
  setText(card.proxy, text);
  setClass(card.proxy, `proxy${p && !p.running ? " proxy-down" : ""}`);
}
