// Plotly figures of the dashboard (the same ones as `kubebench report`): metric versus each swept
// parameter with 95% CI bars, per-trial distributions, scaling curve, comparison and telemetry charts.
import { PLOT_CONFIG, el, fmtValue, loadPlotly, onThemeChange, plotLayout, plotText, themeColours, themeLayout } from "./common.js";

// Plotly's default colours, so that a measured line and its ideal line share one colour.
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export const SCALING = /^(n_?|num_?)?(workers?|replicas?|nodes?|gpus?|processes|procs|world_size|ranks?|np)$/i;

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);

/** "k=v, …" of the swept parameters of a point, leaving out ``skip``; "all" when nothing is left. */
export function pointLabel(params, swept, skip = null) {
  const names = swept.filter((k) => k !== skip);
  return names.map((k) => `${k}=${fmtValue(params[k])}`).join(", ") || "all";
}

/** Error bars of the 95% CIs. A point without a CI (n < 2) gets no bar: NaN on both sides is
 * Plotly's "no bar" (0 or null would draw one, and ``mean - null`` is a bar down to 0). For a metric
 * whose values are all positive, the lower arm stops at 0 (``clipped`` says whether one did). */
export function ciBars(stats) {
  const known = (s) => isNumber(s.mean) && isNumber(s.ci_low) && isNumber(s.ci_high);
  const positive = stats.every((s) => !isNumber(s.min) || s.min >= 0);
  let clipped = false;
  const lower = (s) => {
    if (!known(s)) return NaN;
    const arm = Math.max(0, s.mean - s.ci_low);
    if (positive && arm > s.mean) { clipped = true; return Math.max(0, s.mean); }
    return arm;
  };
  const arrayminus = stats.map(lower);
  return {
    type: "data", symmetric: false, visible: true, thickness: 1.5, width: 5,
    array: stats.map((s) => (known(s) ? Math.max(0, s.ci_high - s.mean) : NaN)),
    arrayminus, clipped,
  };
}

/** The y axis title of a chart of means with CIs. */
function meanTitle(metric, unit, bars) {
  const cut = bars.some((b) => b.clipped) ? ", cut at 0" : "";
  return plotText(`${metric}${unit ? ` (${unit})` : ""}, mean ± 95% CI${cut}`);
}

/** Plotly takes only its own keys: the ``clipped`` mark stays with us. */
function plotlyBars({ clipped, ...bars }) {
  return bars;
}

/** Trials grouped into lines by the other swept parameters, sorted along ``parameter``. */
function linesAlong(trials, swept, parameter, metric) {
  const lines = new Map();
  for (const trial of trials) {
    const stats = trial.summary && trial.summary[metric];
    if (!stats || !isNumber(stats.mean)) continue;
    const name = pointLabel(trial.params, swept, parameter);
    if (!lines.has(name)) lines.set(name, []);
    lines.get(name).push({ x: trial.params[parameter], stats });
  }
  const numeric = [...lines.values()].flat().every((p) => isNumber(p.x));
  for (const points of lines.values()) {
    points.sort((a, b) => (numeric ? a.x - b.x : String(a.x).localeCompare(String(b.x), undefined, { numeric: true })));
  }
  return { lines, numeric };
}

/** The metric's mean ± CI against one swept parameter, one line per value of the others; null
 * when no trial has a value yet. */
export function metricVsParameter(trials, swept, parameter, metric, unit) {
  const { lines, numeric } = linesAlong(trials, swept, parameter, metric);
  if (!lines.size) return null;
  const bars = [...lines.values()].map((points) => ciBars(points.map((p) => p.stats)));
  const data = [...lines.entries()].map(([name, points], i) => ({
    type: "scatter", mode: "lines+markers", name: plotText(name),
    x: points.map((p) => (numeric ? p.x : plotText(fmtValue(p.x)))),
    y: points.map((p) => p.stats.mean),
    error_y: plotlyBars(bars[i]),
  }));
  const values = [...new Set([...lines.values()].flat().map((p) => p.x))];
  const ticks = numeric && values.length <= 12 ? { tickvals: values } : {}; // the swept values, not 1.2, 1.4…
  const layout = plotLayout(`${metric} vs ${parameter}`, {
    xaxis: { title: { text: plotText(parameter) }, type: numeric ? "linear" : "category", ...ticks },
    yaxis: { title: { text: meanTitle(metric, unit, bars) } },
    showlegend: lines.size > 1,
  });
  return { data, layout };
}

export function distributions(trials, runs, swept, metric, unit) {
  const byTrial = new Map();
  for (const run of runs) {
    if (run.warmup || run.status !== "succeeded") continue;
    const value = run.metrics && run.metrics[metric];
    if (!isNumber(value)) continue;
    if (!byTrial.has(run.trial_id)) byTrial.set(run.trial_id, []);
    byTrial.get(run.trial_id).push(value);
  }
  if (!byTrial.size) return null;
  const data = trials.filter((t) => byTrial.has(t.trial_id)).map((trial) => ({
    type: "box", boxpoints: "all", jitter: 0.4, pointpos: 0, boxmean: true,
    name: plotText(swept.length ? pointLabel(trial.params, swept) : `trial ${trial.index}`),
    y: byTrial.get(trial.trial_id),
  }));
  const layout = plotLayout(`${metric} per trial (every run)`, {
    yaxis: { title: { text: plotText(`${metric}${unit ? ` (${unit})` : ""}`) } }, showlegend: false,
  });
  return { data, layout };
}

/** Mean and CI against the number of workers, with the ideal (linear) scaling from the smallest count. */
export function scalingCurve(trials, swept, parameter, metric, goal, unit = "") {
  const { lines, numeric } = linesAlong(trials, swept, parameter, metric);
  if (!numeric) return null;
  const data = [];
  const bars = [];
  for (const [name, points] of lines.entries()) {
    if (points.length < 2) continue;
    bars.push(ciBars(points.map((p) => p.stats)));
    const color = COLOURS[(data.length / 2) % COLOURS.length];
    const base = points[0];
    const ideal = points.map((p) => (goal === "minimize" ? (base.stats.mean * base.x) / p.x : (base.stats.mean * p.x) / base.x));
    const label = lines.size > 1 ? `${name}: ` : "";
    data.push({ type: "scatter", mode: "lines+markers", name: plotText(`${label}measured`), x: points.map((p) => p.x),
      line: { color }, marker: { color },
      y: points.map((p) => p.stats.mean), error_y: plotlyBars(bars[bars.length - 1]),
      customdata: points.map((p, i) => ideal[i] ? (goal === "minimize" ? ideal[i] / p.stats.mean : p.stats.mean / ideal[i]) : null),
      hovertemplate: "%{x}: %{y:.4g} (efficiency %{customdata:.0%})<extra></extra>" });
    data.push({ type: "scatter", mode: "lines", name: plotText(`${label}ideal`), x: points.map((p) => p.x), y: ideal,
      line: { dash: "dash", width: 1, color }, hoverinfo: "skip" });
  }
  if (!data.length) return null;
  const layout = plotLayout(`Scaling: ${metric} vs ${parameter}`, {
    xaxis: { title: { text: plotText(parameter) }, type: "linear", tickvals: [...new Set([...lines.values()].flat().map((p) => p.x))] },
    yaxis: { title: { text: meanTitle(metric, unit, bars) } },
  });
  return { data, layout };
}

/** The medians of A and B per matched trial (the statistic the ratio is of), bars from min to max. */
export function compareBars(rows, metric, labels, unit = "") {
  const x = rows.map((r) => plotText(r.label));
  const side = (key, name) => ({
    type: "bar", name: plotText(name), x,
    y: rows.map((r) => (r[key] && isNumber(r[key].median) ? r[key].median : null)),
    error_y: { type: "data", symmetric: false, visible: true, thickness: 1.5, width: 5, color: themeColours().muted,
      array: rows.map((r) => (r[key] && isNumber(r[key].max) ? r[key].max - r[key].median : NaN)),
      arrayminus: rows.map((r) => (r[key] && isNumber(r[key].min) ? r[key].median - r[key].min : NaN)) },
    hovertemplate: "%{x}: median %{y:.4g}<extra>%{fullData.name}</extra>",
  });
  const data = [side("a", labels[0]), side("b", labels[1])];
  const layout = plotLayout(`${metric}: median of A and B (bars: min–max)`, { barmode: "group", xaxis: { type: "category" },
    yaxis: { title: { text: plotText(`${metric}${unit ? ` (${unit})` : ""}, median`) } } });
  return { data, layout };
}

/** The ratio B/A of the medians per trial with its CI, a line at 1 and the ±threshold band of
 * "no change that matters", points coloured by verdict. */
export function ratioChart(rows, metric, threshold) {
  const usable = rows.filter((r) => isNumber(r.ratio));
  if (!usable.length) return null;
  const colour = { improved: "#2e7d32", improvement: "#2e7d32", faster: "#2e7d32", regressed: "#c62828",
    regression: "#c62828", slower: "#c62828" };
  const data = [{
    type: "scatter", mode: "markers", name: "B / A",
    x: usable.map((r) => plotText(r.label)), y: usable.map((r) => r.ratio),
    marker: { size: 11, color: usable.map((r) => colour[r.verdict] || "#616e7c") },
    // its own colour: by default error bars take the markers', and an array is no colour (B20)
    error_y: { type: "data", symmetric: false, visible: true, color: themeColours().muted,
      array: usable.map((r) => (isNumber(r.ci_high) ? Math.max(0, r.ci_high - r.ratio) : 0)),
      arrayminus: usable.map((r) => (isNumber(r.ci_low) ? Math.max(0, r.ratio - r.ci_low) : 0)) },
    text: usable.map((r) => plotText(r.verdict || "")), hovertemplate: "%{x}: %{y:.3f} (%{text})<extra></extra>",
  }];
  const shapes = [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { dash: "dot", color: themeColours().muted } }];
  if (isNumber(threshold) && threshold > 0) {
    shapes.unshift({ type: "rect", xref: "paper", x0: 0, x1: 1, y0: 1 - threshold, y1: 1 + threshold, layer: "below",
      line: { width: 0 }, fillcolor: themeColours().dark ? "rgba(124,180,255,0.12)" : "rgba(37,99,235,0.08)" });
  }
  const band = isNumber(threshold) ? ` (band: ±${+(threshold * 100).toFixed(2)}%)` : "";
  const layout = plotLayout(`${metric}: ratio of medians B / A, 95% CI`, {
    xaxis: { type: "category" }, yaxis: { title: { text: plotText(`ratio B / A${band}`) } }, showlegend: false, shapes,
  });
  return { data, layout };
}

/** One line chart per telemetry series, time in seconds from the first sample. */
export function telemetryChart(name, points) {
  const t0 = points.length ? points[0][0] : 0;
  const data = [{ type: "scatter", mode: points.length < 40 ? "lines+markers" : "lines", name: plotText(name),
    x: points.map((p) => p[0] - t0), y: points.map((p) => p[1]) }];
  const layout = plotLayout(name, { height: 260, margin: { l: 60, r: 20, t: 40, b: 44 },
    xaxis: { title: { text: "time (s)" } }, yaxis: { exponentformat: "SI" }, showlegend: false });
  return { data, layout };
}

const unescape = (text) => String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** Draws (or redraws in place) a figure into ``node``; marks it data-rendered for tests and readers.
 * The box is a named figure for screen readers (the chart's title). */
export async function draw(node, figure) {
  const Plotly = await loadPlotly();
  if (node.classList.contains("empty")) {
    node.replaceChildren();
    node.classList.remove("empty");
    delete node.dataset.empty;
  }
  // a responsive plot fills its box: the box needs the figure's height, or it collapses
  node.style.height = `${figure.layout.height}px`;
  node.setAttribute("role", "figure");
  node.setAttribute("aria-label", `Chart: ${unescape(figure.layout.title.text)}`);
  await Plotly.react(node, figure.data, figure.layout, PLOT_CONFIG);
  node.dataset.rendered = "1";
}

/** Shows ``message`` in a plot's box instead of empty axes (nothing to plot yet, or at all). */
export function drawEmpty(node, message) {
  if (window.Plotly && node.classList.contains("js-plotly-plot")) window.Plotly.purge(node);
  node.style.height = "";
  node.removeAttribute("role");
  node.removeAttribute("aria-label");
  node.classList.add("empty");
  node.dataset.empty = "1";
  node.replaceChildren(el("p", {}, message));
  node.dataset.rendered = "1";
}

// The system switching light/dark: drawn charts take the new colours in place.
onThemeChange(() => {
  if (!window.Plotly) return;
  const theme = themeLayout();
  const update = { paper_bgcolor: theme.paper_bgcolor, plot_bgcolor: theme.plot_bgcolor, "font.color": theme.font.color,
    "modebar.color": theme.modebar.color, "modebar.activecolor": theme.modebar.activecolor };
  for (const axis of ["xaxis", "yaxis"]) {
    for (const [key, value] of Object.entries(theme[axis])) update[`${axis}.${key}`] = value;
  }
  for (const node of document.querySelectorAll(".js-plotly-plot")) window.Plotly.relayout(node, update);
});

/** A plot container, reused by id so that a redraw updates the chart in place. */
export function plotBox(parent, id) {
  let node = document.getElementById(id);
  if (!node) {
    node = el("div", { id, class: "plot" });
    parent.append(node);
  }
  return node;
}
