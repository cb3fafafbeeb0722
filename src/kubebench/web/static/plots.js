// Plotly figures of the dashboard (the same ones as `kubebench report`): metric versus each swept
// parameter with 95% CI bars, per-trial distributions, scaling curve, comparison and telemetry charts.
import {
  PLOT_CONFIG, axisScale, el, fmtValue, loadPlotly, onThemeChange, plotLayout, plotText, themeColours, themeLayout,
} from "./common.js";

// Plotly's default colours, so that a measured line and its ideal line share one colour.
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export const SCALING = /^(n_?|num_?)?(workers?|replicas?|nodes?|gpus?|processes|procs|world_size|ranks?|np)$/i;

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);

/** "k=v, …" of the swept parameters of a point, leaving out ``skip``; "all" when nothing is left. */
export function pointLabel(params, swept, skip = null) {
  const names = swept.filter((k) => k !== skip);
  return names.map((k) => `${k}=${fmtValue(params[k])}`).join(", ") || "all";
}

/** Error bars of the 95% CIs, in axis units (values × ``factor``). A point without a CI (n < 2) gets no
 * bar: NaN on both sides is Plotly's "no bar" (0 or null would draw one). For a metric whose values are
 * all positive, a CI reaching below zero says only that n is too small (the CLI's "n too small"): it
 * gets no bar either (a whisker from 0 to 5000 around 1000 set the axis and hid the other trials), and
 * ``tooSmall`` marks its point, drawn open. */
export function ciBars(stats, factor = 1) {
  const known = (s) => isNumber(s.mean) && isNumber(s.ci_low) && isNumber(s.ci_high);
  const positive = stats.every((s) => !isNumber(s.min) || s.min >= 0);
  const tooSmall = stats.map((s) => positive && known(s) && s.ci_low < 0);
  const bar = (s, i, arm) => (known(s) && !tooSmall[i] ? Math.max(0, arm(s)) * factor : NaN);
  return {
    type: "data", symmetric: false, visible: true, thickness: 1.5, width: 5,
    array: stats.map((s, i) => bar(s, i, (x) => x.ci_high - x.mean)),
    arrayminus: stats.map((s, i) => bar(s, i, (x) => x.mean - x.ci_low)),
    tooSmall,
  };
}

/** The chart's subtitle: what the points and bars are, and what an open point means. */
function meanSubtitle(bars) {
  const open = bars.some((b) => b.tooSmall.some(Boolean)) ? "; open points: n too small for a CI (add repeats)" : "";
  return `mean ± 95% CI of the runs${open}`;
}

/** Plotly takes only its own keys: the ``tooSmall`` marks stay with us. */
function plotlyBars({ tooSmall, ...bars }) {
  return bars;
}

/** Markers of a line: filled, open where n is too small for a CI. */
function markers(bars) {
  return { symbol: bars.tooSmall.map((small) => (small ? "circle-open" : "circle")), size: 8 };
}

/** An axis of ``values`` in ``unit``: the scale, and the layout keys of its title and ticks. */
function yAxis(values, metric, unit) {
  const scale = axisScale(values, unit);
  return { scale, axis: { title: { text: plotText(scale.unit ? `${metric} (${scale.unit})` : metric) },
    ...(scale.tickformat ? { tickformat: scale.tickformat } : {}) } };
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
  const { scale, axis } = yAxis([...lines.values()].flat().map((p) => p.stats.mean), metric, unit);
  const bars = [...lines.values()].map((points) => ciBars(points.map((p) => p.stats), scale.factor));
  const data = [...lines.entries()].map(([name, points], i) => ({
    type: "scatter", mode: "lines+markers", name: plotText(name),
    x: points.map((p) => (numeric ? p.x : plotText(fmtValue(p.x)))),
    y: points.map((p) => p.stats.mean * scale.factor),
    error_y: plotlyBars(bars[i]), marker: markers(bars[i]),
  }));
  const values = [...new Set([...lines.values()].flat().map((p) => p.x))];
  const ticks = numeric && values.length <= 12 ? { tickvals: values } : {}; // the swept values, not 1.2, 1.4…
  const layout = plotLayout(`${metric} vs ${parameter}`, {
    subtitle: meanSubtitle(bars),
    xaxis: { title: { text: plotText(parameter) }, type: numeric ? "linear" : "category", ...ticks },
    yaxis: axis,
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
  const { scale, axis } = yAxis([...byTrial.values()].flat(), metric, unit);
  const data = trials.filter((t) => byTrial.has(t.trial_id)).map((trial) => ({
    type: "box", boxpoints: "all", jitter: 0.4, pointpos: 0, boxmean: true,
    name: plotText(swept.length ? pointLabel(trial.params, swept) : `trial ${trial.index}`),
    y: byTrial.get(trial.trial_id).map((v) => v * scale.factor),
  }));
  const layout = plotLayout(`${metric} per trial`, { subtitle: "every run; the box: quartiles, the dashed line: the mean",
    yaxis: axis, showlegend: false });
  return { data, layout };
}

/** Mean and CI against the number of workers, with the ideal (linear) scaling from the smallest count. */
export function scalingCurve(trials, swept, parameter, metric, goal, unit = "") {
  const { lines, numeric } = linesAlong(trials, swept, parameter, metric);
  if (!numeric) return null;
  const { scale, axis } = yAxis([...lines.values()].flat().map((p) => p.stats.mean), metric, unit);
  const data = [];
  const bars = [];
  for (const [name, points] of lines.entries()) {
    if (points.length < 2) continue;
    bars.push(ciBars(points.map((p) => p.stats), scale.factor));
    const color = COLOURS[(data.length / 2) % COLOURS.length];
    const base = points[0];
    const ideal = points.map((p) => (goal === "minimize" ? (base.stats.mean * base.x) / p.x : (base.stats.mean * p.x) / base.x));
    const label = lines.size > 1 ? `${name}: ` : "";
    data.push({ type: "scatter", mode: "lines+markers", name: plotText(`${label}measured`), x: points.map((p) => p.x),
      line: { color }, marker: { color, ...markers(bars[bars.length - 1]) },
      y: points.map((p) => p.stats.mean * scale.factor), error_y: plotlyBars(bars[bars.length - 1]),
      customdata: points.map((p, i) => ideal[i] ? (goal === "minimize" ? ideal[i] / p.stats.mean : p.stats.mean / ideal[i]) : null),
      hovertemplate: "%{x}: %{y:.3s} (efficiency %{customdata:.0%})<extra></extra>" });
    data.push({ type: "scatter", mode: "lines", name: plotText(`${label}ideal`), x: points.map((p) => p.x),
      y: ideal.map((v) => v * scale.factor), line: { dash: "dash", width: 1, color }, hoverinfo: "skip" });
  }
  if (!data.length) return null;
  const layout = plotLayout(`Scaling: ${metric} vs ${parameter}`, {
    subtitle: meanSubtitle(bars),
    xaxis: { title: { text: plotText(parameter) }, type: "linear", tickvals: [...new Set([...lines.values()].flat().map((p) => p.x))] },
    yaxis: axis,
  });
  return { data, layout };
}

/** The medians of A and B per matched trial (the statistic the ratio is of), bars from min to max. */
export function compareBars(rows, metric, labels, unit = "") {
  const x = rows.map((r) => plotText(r.label));
  const { scale, axis } = yAxis(rows.flatMap((r) => [r.a && r.a.max, r.b && r.b.max]), metric, unit);
  const f = scale.factor;
  const side = (key, name) => ({
    type: "bar", name: plotText(name), x,
    y: rows.map((r) => (r[key] && isNumber(r[key].median) ? r[key].median * f : null)),
    error_y: { type: "data", symmetric: false, visible: true, thickness: 1.5, width: 5, color: themeColours().muted,
      array: rows.map((r) => (r[key] && isNumber(r[key].max) ? (r[key].max - r[key].median) * f : NaN)),
      arrayminus: rows.map((r) => (r[key] && isNumber(r[key].min) ? (r[key].median - r[key].min) * f : NaN)) },
    hovertemplate: "%{x}: median %{y:.3s}<extra>%{fullData.name}</extra>",
  });
  const data = [side("a", labels[0]), side("b", labels[1])];
  const layout = plotLayout(`${metric}: median of A and B`, { subtitle: "bars: min–max of the runs", barmode: "group",
    xaxis: { type: "category" }, yaxis: axis });
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
  const band = isNumber(threshold) ? `; band: ±${+(threshold * 100).toFixed(2)}%, no change that matters` : "";
  const layout = plotLayout(`${metric}: B / A`, { subtitle: `ratio of the medians with the 90% CI of B / A${band}`,
    xaxis: { type: "category" }, yaxis: { title: { text: "ratio B / A" } }, showlegend: false, shapes,
  });
  return { data, layout };
}

/** One line chart per telemetry series, time in seconds from the first sample, values in the unit
 * its name gives (``memory_rss_bytes`` in MiB or GiB, ``cpu_percent`` in %). */
export function telemetryChart(name, points, unit = "") {
  const t0 = points.length ? points[0][0] : 0;
  const { scale, axis } = yAxis(points.map((p) => p[1]), "", unit);
  const data = [{ type: "scatter", mode: points.length < 40 ? "lines+markers" : "lines", name: plotText(name),
    x: points.map((p) => p[0] - t0), y: points.map((p) => p[1] * scale.factor) }];
  const layout = plotLayout(name, { height: 260, margin: { l: 60, r: 20, t: 40, b: 44 },
    xaxis: { title: { text: "time (s)" } }, yaxis: { ...axis, title: { text: plotText(scale.unit) } }, showlegend: false });
  return { data, layout };
}

/** Each step's time in order, the warm-up MSER-5 detected shaded, and the steady mean as a line. */
export function stepTimesChart(steps, warmup, steady) {
  const { scale, axis } = yAxis(steps, "step time", "s");
  const data = [{ type: "scatter", mode: steps.length < 200 ? "lines+markers" : "lines", name: "step time",
    x: steps.map((_, i) => i), y: steps.map((v) => v * scale.factor), marker: { size: 4 } }];
  const shapes = [];
  if (isNumber(warmup) && warmup > 0) {
    shapes.push({ type: "rect", xref: "x", yref: "paper", x0: -0.5, x1: warmup - 0.5, y0: 0, y1: 1, layer: "below",
      line: { width: 0 }, fillcolor: themeColours().dark ? "rgba(255,200,80,0.12)" : "rgba(240,160,0,0.12)" });
  }
  if (isNumber(steady)) {
    data.push({ type: "scatter", mode: "lines", name: "steady mean", x: [isNumber(warmup) ? warmup : 0, steps.length - 1],
      y: [steady * scale.factor, steady * scale.factor], line: { dash: "dash", width: 1.5 } });
  }
  const cut = isNumber(warmup) ? `; shaded: the ${warmup} warm-up steps MSER-5 cut` : "";
  const layout = plotLayout("step time per step", { subtitle: `every step${cut}`, shapes, showlegend: data.length > 1,
    xaxis: { title: { text: "step" } }, yaxis: axis });
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
  const layout = fitLegend(figure, node.clientWidth || 600);
  // a responsive plot fills its box: the box needs the figure's height, or it collapses
  node.style.height = `${layout.height}px`;
  node.setAttribute("role", "figure");
  node.setAttribute("aria-label", `Chart: ${unescape(figure.layout.title.text)}`);
  await Plotly.react(node, figure.data, layout, PLOT_CONFIG);
  node.dataset.rendered = "1";
}

/** Room for a legend below the chart (``LEGEND_BELOW``): entries of one width, as many rows as the
 * box's width needs, and the figure's bottom margin and height grown by those rows, so that on a
 * phone the legend neither covers the plot nor its x axis' title (review 2026-12-02 #3). */
export function fitLegend(figure, width) {
  const { layout } = figure;
  const names = figure.data.filter((t) => t.showlegend !== false && t.name !== undefined).map((t) => unescape(t.name));
  const shown = layout.showlegend === true || (layout.showlegend !== false && names.length > 1);
  if (!layout.legend || layout.legend.yref !== "container" || !shown || !names.length) return layout;
  const entry = Math.min(width - 24, Math.max(...names.map((n) => n.length)) * 6.6 + 46);
  const rows = Math.ceil(names.length / Math.max(1, Math.floor((width - 24) / entry)));
  const extra = rows * 19 + 10;
  const margin = { ...(layout.margin || {}) };
  margin.b = (margin.b ?? 56) + extra;
  return { ...layout, margin, height: (layout.height || 360) + extra,
    legend: { ...layout.legend, entrywidth: entry, entrywidthmode: "pixels" } };
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
