// The history page's chart, drawn as SVG: per trial the medians (a line; markers up to 100 points)
// with their CI band, change points as vertical lines with their change written above, a legend that
// shows or hides each trial, the nearest point on hover, and a click that opens its experiment.
// The x axis is the series' experiments, evenly spaced and named by the labels that tell them apart
// (version, commit) or by dates precise enough to differ, as asv does; the y axis is in the metric's
// unit with SI ticks, or, for trials of very different levels, each trial relative to its own median.
// It draws the Plotly figure the API gives (the one `kubebench report` embeds), without Plotly: on the
// page of a series of 500 experiments, loading Plotly alone took longer than the page's 300 ms budget.
import { el, fmtNum } from "./common.js";
import { svg } from "./sparklines.js";

const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const MARGIN = { left: 64, right: 16, bottom: 40, top: 12 };
const DASH = { dash: "6 4", dot: "2 3" };
const NEAR_PX = 30;

const known = (v) => typeof v === "number" && Number.isFinite(v);
// trials whose levels differ by more than this are drawn relative to their own medians at first
const RELATIVE_SPREAD = 2;
const median = (values) => {
  const sorted = values.filter(known).sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const signed = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(Math.abs(x) < 10 ? 1 : 0)}%`;

/** The trials of a figure: its traces in pairs (CI band, line) of one legend group each. */
function trialsOf(figure) {
  const groups = new Map();
  figure.data.forEach((trace) => {
    const group = groups.get(trace.legendgroup) || { visible: trace.visible === true };
    groups.set(trace.legendgroup, group);
    if (trace.fill === "toself") group.band = trace;
    else group.line = trace;
  });
  return [...groups.values()].filter((g) => g.line).map((g, i) => {
    const points = g.line.x.map((x, j) => ({ t: Number(x), y: g.line.y[j], id: g.line.customdata?.[j],
      text: g.line.text?.[j] || "", hover: g.line.hovertext?.[j] || "" })).filter((p) => known(p.t) && known(p.y));
    return { ...g, colour: COLOURS[i % COLOURS.length], points, level: median(points.map((p) => p.y)) };
  });
}

/** Whether the trials shown sit at levels far apart (1 M and 3.4 M): one linear axis would flatten a step. */
function levelsDiffer(trials) {
  const levels = trials.filter((t) => t.visible && known(t.level) && t.level > 0).map((t) => t.level);
  return levels.length > 1 && Math.max(...levels) / Math.min(...levels) > RELATIVE_SPREAD;
}

/** About ``count`` round values covering [low, high]. */
function ticks(low, high, count = 5) {
  const raw = (high - low) / count || 1;
  const step = [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw))).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Draws ``figure`` (a history figure of the API) into ``node``, ``height`` px high. */
export function drawHistory(node, figure, height) {
  const trials = trialsOf(figure);
  const legend = el("div", { class: "history-legend", role: "group", "aria-label": "Trials shown" });
  const chart = el("div", { class: "history-svg" });
  const tip = el("div", { class: "history-tip", hidden: true });
  const view = { relative: levelsDiffer(trials) };
  const toggle = el("button", { type: "button", class: "secondary small history-view", "aria-pressed": String(view.relative),
    title: "each trial's medians relative to that trial's own median, so that trials of different levels share one axis" },
  "relative to each trial's median");
  node.replaceChildren(chart, tip, legend);
  node.setAttribute("role", "figure");
  node.setAttribute("aria-label", `Chart: ${figure.layout.title?.text || "history"}`);
  const redraw = () => {
    node.dataset.view = view.relative ? "relative" : "values";
    render(chart, tip, trials, figure.layout, height, view.relative);
  };
  toggle.addEventListener("click", () => {
    view.relative = !view.relative;
    toggle.setAttribute("aria-pressed", String(view.relative));
    redraw();
  });
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
  if (trials.length > 1) legend.append(toggle);
  redraw();
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(redraw, 150);
  });
  node.dataset.rendered = "1";
}

/** The x positions to name: the figure's ticks, thinned so that their names do not overlap. */
function xTicks(layout, x, width) {
  const values = layout.xaxis?.tickvals || [];
  const names = layout.xaxis?.ticktext || [];
  const room = Math.max(...names.map((n) => String(n).length), 4) * 7 + 16;
  const every = Math.max(1, Math.ceil(values.length / Math.max(2, Math.floor(width / room))));
  return values.map((v, i) => [v, names[i]]).filter((_, i) => i % every === 0 || i === values.length - 1)
    .filter(([v], i, all) => i === 0 || i === all.length - 1 || x(all[all.length - 1][0]) - x(v) > room);
}

function render(chart, tip, trials, layout, height, relative) {
  const width = Math.max(320, chart.clientWidth || 800);
  const shown = trials.filter((t) => t.visible);
  const all = trials.flatMap((t) => t.points);
  // relative: each trial's value over its own median, in percent
  const at = (trial, v) => (relative && trial.level ? (v / trial.level - 1) * 100 : v);
  const bands = shown.flatMap((t) => (t.band ? t.band.y.filter(known).map((v) => at(t, v)) : []));
  const ys = [...shown.flatMap((t) => t.points.map((p) => at(t, p.y))), ...bands];
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
    box.append(svg("text", { x: MARGIN.left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick" },
      relative ? signed(v) : fmtNum(v)));
  }
  for (const [t, name] of xTicks(layout, x, width)) {
    box.append(svg("text", { x: x(t), y: height - MARGIN.bottom + 16, "text-anchor": "middle", class: "tick x-tick" }, name));
  }
  const yTitle = relative ? "change from the trial's median (%)" : layout.yaxis?.title?.text || "";
  box.append(svg("text", { x: 14, y: top + (height - top - MARGIN.bottom) / 2, class: "axis-title y-title",
    transform: `rotate(-90 14 ${top + (height - top - MARGIN.bottom) / 2})`, "text-anchor": "middle" }, yTitle));
  box.append(svg("text", { x: (MARGIN.left + width - MARGIN.right) / 2, y: height - 6, class: "axis-title",
    "text-anchor": "middle" }, layout.xaxis?.title?.text || ""));
  for (const trial of shown) {
    if (trial.band) {
      const corners = trial.band.x.map((t, j) => [Number(t), at(trial, trial.band.y[j])]).filter(([t, v]) => known(t) && known(v));
      box.append(svg("polygon", { points: corners.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: trial.colour, "fill-opacity": "0.2", class: "band" }));
    }
    box.append(svg("polyline", { points: trial.points.map((p) => `${x(p.t).toFixed(1)},${y(at(trial, p.y)).toFixed(1)}`).join(" "),
      fill: "none", stroke: trial.colour, "stroke-width": "1.5", class: "line" }));
    if (trial.line.mode.includes("markers")) {
      for (const p of trial.points) {
        box.append(svg("circle", { cx: x(p.t).toFixed(1), cy: y(at(trial, p.y)).toFixed(1), r: 3, fill: trial.colour,
          class: "point", "data-id": p.id ?? "" }));
      }
    }
  }
  for (const shape of layout.shapes || []) {
    box.append(svg("line", { x1: x(Number(shape.x0)), x2: x(Number(shape.x0)), y1: top, y2: height - MARGIN.bottom,
      stroke: shape.line.color, "stroke-dasharray": DASH[shape.line.dash] || "", class: "change" }));
  }
  for (const note of notes) {
    const text = svg("text", { x: x(Number(note.x)), y: top - 4 - 14 * note.level, "text-anchor": "middle",
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
        const d = Math.hypot(x(p.t) - mx, y(at(trial, p.y)) - my);
        if (d < distance) [best, distance] = [{ ...p, trial }, d];
      }
    }
    return best;
  };
  box.addEventListener("mousemove", (event) => {
    const p = nearest(event);
    tip.hidden = !p;
    if (!p) return;
    const value = relative ? `${p.hover} (${signed(at(p.trial, p.y))})` : p.hover || fmtNum(p.y);
    tip.replaceChildren(el("strong", {}, p.id || ""), el("br"), `${p.trial.line.name}: ${value}`,
      ...(p.text ? [el("br"), p.text] : []));
    tip.style.left = `${Math.min(x(p.t) + 12, width - 220)}px`;
    tip.style.top = `${y(at(p.trial, p.y)) + 12}px`;
  });
  box.addEventListener("mouseleave", () => { tip.hidden = true; });
  box.addEventListener("click", (event) => {
    const p = nearest(event);
    if (p && p.id) window.location.href = `/experiments/${encodeURIComponent(p.id)}`;
  });
  chart.replaceChildren(box);
}
