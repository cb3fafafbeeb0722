// The history page's chart, drawn as SVG: per trial the medians (a line; markers up to 100 points)
// with their CI band, change points as vertical lines with their change written above, a legend that
// shows or hides each trial, the nearest point on hover, and a click that opens its experiment.
// It draws the Plotly figure the API gives (the one `kubebench report` embeds), without Plotly: on the
// page of a series of 500 experiments, loading Plotly alone took longer than the page's 300 ms budget.
import { el, fmtNum } from "./common.js";
import { svg } from "./sparklines.js";

const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const MARGIN = { left: 64, right: 16, bottom: 40, top: 12 };
const DASH = { dash: "6 4", dot: "2 3" };
const NEAR_PX = 30;

const time = (text) => Date.parse(String(text).replace(" ", "T"));
const known = (v) => typeof v === "number" && Number.isFinite(v);

/** The trials of a figure: its traces in pairs (CI band, line) of one legend group each. */
function trialsOf(figure) {
  const groups = new Map();
  figure.data.forEach((trace) => {
    const group = groups.get(trace.legendgroup) || { visible: trace.visible === true };
    groups.set(trace.legendgroup, group);
    if (trace.fill === "toself") group.band = trace;
    else group.line = trace;
  });
  return [...groups.values()].filter((g) => g.line).map((g, i) => ({ ...g, colour: COLOURS[i % COLOURS.length],
    points: g.line.x.map((x, j) => ({ t: time(x), y: g.line.y[j], id: g.line.customdata?.[j], text: g.line.text?.[j] || "" }))
      .filter((p) => known(p.t) && known(p.y)) }));
}

/** About ``count`` round values covering [low, high]. */
function ticks(low, high, count = 5) {
  const raw = (high - low) / count || 1;
  const step = [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw))).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function dateLabel(ms, span) {
  const d = new Date(ms);
  const pad = (x) => String(x).padStart(2, "0");
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return span < 2 * 86400e3 ? `${day} ${pad(d.getHours())}:${pad(d.getMinutes())}` : day;
}

/** Draws ``figure`` (a history figure of the API) into ``node``, ``height`` px high. */
export function drawHistory(node, figure, height) {
  const trials = trialsOf(figure);
  const legend = el("div", { class: "history-legend", role: "group", "aria-label": "Trials shown" });
  const chart = el("div", { class: "history-svg" });
  const tip = el("div", { class: "history-tip", hidden: true });
  node.replaceChildren(chart, tip, legend);
  node.setAttribute("role", "figure");
  node.setAttribute("aria-label", `Chart: ${figure.layout.title?.text || "history"}`);
  const redraw = () => render(chart, tip, trials, figure.layout, height);
  for (const trial of trials) {
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = trial.colour; // CSSOM: the page's CSP refuses style attributes
    const button = el("button", { type: "button", class: "history-key", "aria-pressed": String(trial.visible) },
      swatch, trial.line.name);
    button.addEventListener("click", () => {
      trial.visible = !trial.visible;
      button.setAttribute("aria-pressed", String(trial.visible));
      redraw();
    });
    legend.append(button);
  }
  redraw();
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(redraw, 150);
  });
  node.dataset.rendered = "1";
}

function render(chart, tip, trials, layout, height) {
  const width = Math.max(320, chart.clientWidth || 800);
  const shown = trials.filter((t) => t.visible);
  const all = trials.flatMap((t) => t.points);
  const bands = shown.flatMap((t) => (t.band ? t.band.y.filter(known) : []));
  const ys = [...shown.flatMap((t) => t.points.map((p) => p.y)), ...bands];
  const stacks = new Map(); // annotations at one x stack upwards
  const notes = (layout.annotations || []).map((a) => {
    const level = stacks.get(a.x) || 0;
    stacks.set(a.x, level + 1);
    return { ...a, level };
  });
  const top = MARGIN.top + 14 * Math.max(0, ...[...stacks.values()]);
  const t0 = Math.min(...all.map((p) => p.t)), t1 = Math.max(...all.map((p) => p.t));
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  const pad = (y1 - y0) * 0.05 || Math.abs(y1) * 0.05 || 1;
  y0 -= pad;
  y1 += pad;
  const x = (t) => MARGIN.left + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (width - MARGIN.left - MARGIN.right);
  const y = (v) => top + (1 - (v - y0) / (y1 - y0)) * (height - top - MARGIN.bottom);
  const box = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "history-plot" });
  box.append(svg("rect", { x: MARGIN.left, y: top, width: width - MARGIN.left - MARGIN.right,
    height: height - top - MARGIN.bottom, class: "history-area" }));
  for (const v of ticks(y0, y1)) {
    box.append(svg("line", { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(v), y2: y(v), class: "grid" }));
    box.append(svg("text", { x: MARGIN.left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" }, fmtNum(v)));
  }
  for (const t of ticks(t0, t1, Math.max(2, Math.floor(width / 160)))) {
    box.append(svg("text", { x: x(t), y: height - MARGIN.bottom + 16, "text-anchor": "middle", class: "tick" },
      dateLabel(t, t1 - t0)));
  }
  box.append(svg("text", { x: 14, y: top + (height - top - MARGIN.bottom) / 2, class: "axis-title",
    transform: `rotate(-90 14 ${top + (height - top - MARGIN.bottom) / 2})`, "text-anchor": "middle" },
  layout.yaxis?.title?.text || ""));
  box.append(svg("text", { x: (MARGIN.left + width - MARGIN.right) / 2, y: height - 6, class: "axis-title",
    "text-anchor": "middle" }, layout.xaxis?.title?.text || ""));
  for (const trial of shown) {
    if (trial.band) {
      const corners = trial.band.x.map((t, j) => [time(t), trial.band.y[j]]).filter(([t, v]) => known(t) && known(v));
      box.append(svg("polygon", { points: corners.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: trial.colour, "fill-opacity": "0.2", class: "band" }));
    }
    box.append(svg("polyline", { points: trial.points.map((p) => `${x(p.t).toFixed(1)},${y(p.y).toFixed(1)}`).join(" "),
      fill: "none", stroke: trial.colour, "stroke-width": "1.5", class: "line" }));
    if (trial.line.mode.includes("markers")) {
      for (const p of trial.points) {
        box.append(svg("circle", { cx: x(p.t).toFixed(1), cy: y(p.y).toFixed(1), r: 3, fill: trial.colour,
          class: "point", "data-id": p.id ?? "" }));
      }
    }
  }
  for (const shape of layout.shapes || []) {
    box.append(svg("line", { x1: x(time(shape.x0)), x2: x(time(shape.x0)), y1: top, y2: height - MARGIN.bottom,
      stroke: shape.line.color, "stroke-dasharray": DASH[shape.line.dash] || "", class: "change" }));
  }
  for (const note of notes) {
    const text = svg("text", { x: x(time(note.x)), y: top - 4 - 14 * note.level, "text-anchor": "middle",
      fill: note.font?.color || "currentColor", class: "change-note" }, note.text);
    text.append(svg("title", {}, note.hovertext || note.text));
    box.append(text);
  }
  const nearest = (event) => {
    const bounds = box.getBoundingClientRect();
    const mx = event.clientX - bounds.left, my = event.clientY - bounds.top;
    let best = null, distance = NEAR_PX;
    for (const trial of shown) {
      for (const p of trial.points) {
        const d = Math.hypot(x(p.t) - mx, y(p.y) - my);
        if (d < distance) [best, distance] = [{ ...p, trial }, d];
      }
    }
    return best;
  };
  box.addEventListener("mousemove", (event) => {
    const p = nearest(event);
    tip.hidden = !p;
    if (!p) return;
    tip.replaceChildren(el("strong", {}, p.id || ""), el("br"), `${p.trial.line.name}: ${fmtNum(p.y)}`,
      ...(p.text ? [el("br"), p.text] : []));
    tip.style.left = `${Math.min(x(p.t) + 12, width - 220)}px`;
    tip.style.top = `${y(p.y) + 12}px`;
  });
  box.addEventListener("mouseleave", () => { tip.hidden = true; });
  box.addEventListener("click", (event) => {
    const p = nearest(event);
    if (p && p.id) window.location.href = `/experiments/${encodeURIComponent(p.id)}`;
  });
  chart.replaceChildren(box);
}
