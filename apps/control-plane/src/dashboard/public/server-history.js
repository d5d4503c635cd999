// A server's last hour of figures in the capacity view: fetched only for cards that are on
// screen (a few requests at a time), kept up to date from live samples, and drawn as the
// card's sparkline.
import { client, ok } from "./api.js";

const HOUR_MS = 60 * 60 * 1000;
const HISTORY_CONCURRENCY = 4;

/** A point of the history in percent, from a stored sample or a `server.stats` event (the same fields). */
function point(p) {
  return { t: Date.parse(p.ts), cpu: p.cpu_percent, ram: p.ram_total_mb ? (100 * p.ram_used_mb) / p.ram_total_mb : 0, disk: p.disk_total_gb ? (100 * p.disk_used_gb) / p.disk_total_gb : 0 };
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

/**
 * `wantHistory(card)`: loads the card's history once (again after a failure), at most
 * HISTORY_CONCURRENCY requests at a time, and draws its sparkline.
 */
export function historyLoader(ctx, orgId) {
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
          card.history = r.points.map(point);
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
  return wantHistory;
}

/** Adds a live `server.stats` sample to the card's history once that is loaded (keeping the last hour); false before. */
export function addSample(card, d) {
  if (!card.history) return false;
  const p = point(d);
  card.history.push(p);
  while (card.history.length > 0 && card.history[0].t < p.t - HOUR_MS) card.history.shift();
  if (card.visible) drawSpark(card.spark, card.history);
  return true;
}
