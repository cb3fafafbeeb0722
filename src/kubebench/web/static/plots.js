// Plotly figures of the dashboard (the same ones as `kubebench report`): metric versus each swept
// parameter with 95% CI bars, per-trial distributions, scaling curve, comparison and telemetry charts.
import { PLOT_CONFIG, el, fmtValue, loadPlotly, plotLayout, plotText } from "./common.js";

// Plotly's default colours, so that a measured line and its ideal line share one colour.
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export const SCALING = /^(n_?|num_?)?(workers?|replicas?|nodes?|gpus?|processes|procs|world_size|ranks?|np)$/i;

const isNumber = (v) => typeof v === "number" && Number.isFinite(v);

/** "k=v, …" of the swept parameters of a point, leaving out ``skip``; "all" when nothing is left. */
export function pointLabel(params, swept, skip = null) {
  const names = swept.filter((k) => k !== skip);
  return names.map((k) => `${k}=${fmtValue(params[k])}`).join(", ") || "all";
}

function ciBars(stats) {
  const gap = (x) => (isNumber(x) ? Math.max(0, x) : 0);
  return {
    type: "data", symmetric: false, visible: true, thickness: 1.5, width: 5,
    array: stats.map((s) => gap(s.ci_high - s.mean)),
    arrayminus: stats.map((s) => gap(s.mean - s.ci_low)),
  };
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

export function metricVsParameter(trials, swept, parameter, metric, unit) {
  const { lines, numeric } = linesAlong(trials, swept, parameter, metric);
  const data = [...lines.entries()].map(([name, points]) => ({
    type: "scatter", mode: "lines+markers", name: plotText(name),
    x: points.map((p) => (numeric ? p.x : plotText(fmtValue(p.x)))),
    y: points.map((p) => p.stats.mean),
    error_y: ciBars(points.map((p) => p.stats)),
  }));
  const values = [...new Set([...lines.values()].flat().map((p) => p.x))];
  const ticks = numeric && values.length <= 12 ? { tickvals: values } : {}; // the swept values, not 1.2, 1.4…
  const layout = plotLayout(`${metric} vs ${parameter}`, {
    xaxis: { title: { text: plotText(parameter) }, type: numeric ? "linear" : "category", ...ticks },
    yaxis: { title: { text: plotText(`${metric}${unit ? ` (${unit})` : ""}, mean ± 95% CI`) } },
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
export function scalingCurve(trials, swept, parameter, metric, goal) {
  const { lines, numeric } = linesAlong(trials, swept, parameter, metric);
  if (!numeric) return null;
  const data = [];
  for (const [name, points] of lines.entries()) {
    if (points.length < 2) continue;
    const color = COLOURS[(data.length / 2) % COLOURS.length];
    const base = points[0];
    const ideal = points.map((p) => (goal === "minimize" ? (base.stats.mean * base.x) / p.x : (base.stats.mean * p.x) / base.x));
    const label = lines.size > 1 ? `${name}: ` : "";
    data.push({ type: "scatter", mode: "lines+markers", name: plotText(`${label}measured`), x: points.map((p) => p.x),
      line: { color }, marker: { color },
      y: points.map((p) => p.stats.mean), error_y: ciBars(points.map((p) => p.stats)),
      customdata: points.map((p, i) => ideal[i] ? (goal === "minimize" ? ideal[i] / p.stats.mean : p.stats.mean / ideal[i]) : null),
      hovertemplate: "%{x}: %{y:.4g} (efficiency %{customdata:.0%})<extra></extra>" });
    data.push({ type: "scatter", mode: "lines", name: plotText(`${label}ideal`), x: points.map((p) => p.x), y: ideal,
      line: { dash: "dash", width: 1, color }, hoverinfo: "skip" });
  }
  if (!data.length) return null;
  const layout = plotLayout(`Scaling: ${metric} vs ${parameter}`, {
    xaxis: { title: { text: plotText(parameter) }, type: "linear", tickvals: [...new Set([...lines.values()].flat().map((p) => p.x))] },
    yaxis: { title: { text: plotText(`${metric}, mean ± 95% CI`) } },
  });
  return { data, layout };
}

/** Means of A and B per matched trial with their CIs, side by side. */
export function compareBars(rows, metric, labels) {
  const x = rows.map((r) => plotText(r.label));
  const side = (key, name) => ({
    type: "bar", name: plotText(name), x,
    y: rows.map((r) => (r[key] ? r[key].mean : null)),
    error_y: ciBars(rows.map((r) => r[key] || {})),
  });
  const data = [side("a", labels[0]), side("b", labels[1])];
  const layout = plotLayout(`${metric}: A vs B`, { barmode: "group", xaxis: { type: "category" },
    yaxis: { title: { text: plotText(`${metric}, mean ± 95% CI`) } } });
  return { data, layout };
}

/** The ratio B/A per trial with its CI, a line at 1, points coloured by verdict. */
export function ratioChart(rows, metric) {
  const usable = rows.filter((r) => isNumber(r.ratio));
  if (!usable.length) return null;
  const colour = { improved: "#2e7d32", improvement: "#2e7d32", faster: "#2e7d32", regressed: "#c62828",
    regression: "#c62828", slower: "#c62828" };
  const data = [{
    type: "scatter", mode: "markers", name: "B / A",
    x: usable.map((r) => plotText(r.label)), y: usable.map((r) => r.ratio),
    marker: { size: 11, color: usable.map((r) => colour[r.verdict] || "#616e7c") },
    error_y: { type: "data", symmetric: false, visible: true,
      array: usable.map((r) => (isNumber(r.ci_high) ? Math.max(0, r.ci_high - r.ratio) : 0)),
      arrayminus: usable.map((r) => (isNumber(r.ci_low) ? Math.max(0, r.ratio - r.ci_low) : 0)) },
    text: usable.map((r) => plotText(r.verdict || "")), hovertemplate: "%{x}: %{y:.3f} (%{text})<extra></extra>",
  }];
  const layout = plotLayout(`${metric}: ratio B / A with 95% CI`, {
    xaxis: { type: "category" }, yaxis: { title: { text: "ratio" } }, showlegend: false,
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { dash: "dot", color: "#829ab1" } }],
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

/** Draws (or redraws in place) a figure into ``node``; marks it data-rendered for tests and readers. */
export async function draw(node, figure) {
  const Plotly = await loadPlotly();
  // a responsive plot fills its box: the box needs the figure's height, or it collapses
  node.style.height = `${figure.layout.height}px`;
  await Plotly.react(node, figure.data, figure.layout, PLOT_CONFIG);
  node.dataset.rendered = "1";
}

/** A plot container, reused by id so that a redraw updates the chart in place. */
export function plotBox(parent, id) {
  let node = document.getElementById(id);
  if (!node) {
    node = el("div", { id, class: "plot" });
    parent.append(node);
  }
  return node;
}
