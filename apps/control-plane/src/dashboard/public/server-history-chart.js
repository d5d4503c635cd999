// The capacity view's history dialog: a server's last hour as a uPlot chart (CPU, RAM and disk
// in percent), new samples added as they arrive.
import { clear, h } from "./dom.js";

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

function chartData(points) {
  return [points.map((p) => p.t / 1000), points.map((p) => p.cpu), points.map((p) => p.ram), points.map((p) => p.disk)];
}

/**
 * Appends the (closed) dialog to `main`. `open(card)` shows the card's history, loading it
 * through `wantHistory` first if needed; `refresh(card)` redraws the chart when it shows that card.
 */
export function historyChart(main, ctx, wantHistory) {
  let dialogCard = null;
  let chart = null;
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

  function refresh(card) {
    if (dialogCard === card && chart && card.history) chart.setData(chartData(card.history));
  }
  async function open(card) {
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
  return { open, refresh };
}
