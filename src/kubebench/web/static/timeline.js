// Where the time goes: a run drawn as lanes of phases (/runs/ID/timeline) and an experiment's phase
// medians as a stacked bar per trial (/experiments/ID/phases), from /api/runs/ID/timeline and
// /api/experiments/ID/phases. The colours come with the data: the same ones as `kubebench report`.
import { PLOT_CONFIG, clear, el, fmtParams, getJson, loadPlotly, onThemeChange, plotLayout, showError } from "./common.js";

const secs = (v) => (v === null || v === undefined || !Number.isFinite(v) ? "–"
  : Math.abs(v) < 0.1 ? `${(v * 1000).toFixed(0)} ms` : Math.abs(v) < 10 ? `${v.toFixed(2)} s` : `${v.toFixed(1)} s`);
const resolution = (p) => (p >= 1 ? "1 s" : p >= 1e-3 ? "1 ms" : p >= 1e-6 ? "1 µs" : "1 ns");
const name = (data, metric) => data.names[metric] || metric;

function laneTraces(data) {
  const traces = [];
  const shown = new Set();
  for (const lane of [...data.lanes].reverse()) {
    for (const s of lane.segments) {
      traces.push({ type: "bar", orientation: "h", y: [lane.name], x: [s.end - s.start], base: [s.start],
        name: name(data, s.phase), legendgroup: s.phase, showlegend: !shown.has(s.phase),
        marker: { color: data.colours[s.phase] || "#333" },
        hovertemplate: `${lane.name}: ${name(data, s.phase)} ${secs(s.end - s.start)}<extra></extra>` });
      shown.add(s.phase);
    }
  }
  return traces;
}

async function runPage(root) {
  const runId = root.dataset.runId;
  const data = await getJson(`/api/runs/${encodeURIComponent(runId)}/timeline`);
  const phases = clear(root.querySelector("#timeline-phases tbody"));
  for (const [metric, value] of Object.entries(data.phases)) {
    phases.append(el("tr", {}, el("th", {}, name(data, metric)),
      el("td", {}, metric === "overhead_fraction" ? `${(value * 100).toFixed(1)}%` : secs(value))));
  }
  const moments = clear(root.querySelector("#timeline-moments tbody"));
  for (const b of [...data.boundaries].sort((a, c) => a.t - c.t)) {
    moments.append(el("tr", { class: b.source }, el("td", { class: "num" }, b.t.toFixed(3)), el("td", {}, b.name),
      el("td", {}, b.replica || "run"), el("td", {}, b.source), el("td", {}, resolution(b.precision)),
      el("td", {}, b.origin)));
  }
  const plot = root.querySelector("#timeline-plot");
  if (!data.lanes.length) {
    plot.append(el("p", { class: "muted" }, "This run has no timeline (runs recorded before kubebench kept one)."));
    return;
  }
  const Plotly = await loadPlotly();
  const draw = () => Plotly.react(plot, laneTraces(data), plotLayout(`run ${runId}`, {
    barmode: "overlay", height: 220 + 30 * data.lanes.length, legend: { orientation: "h", y: -0.45 },
    xaxis: { title: { text: "seconds since submit" } } }),
  PLOT_CONFIG);
  await draw();
  plot.dataset.rendered = "1";
  onThemeChange(draw);
}

async function phasesPage(root) {
  const id = root.dataset.experimentId;
  const data = await getJson(`/api/experiments/${encodeURIComponent(id)}/phases`);
  const labels = data.trials.map((t) => (Object.keys(t.params).length ? fmtParams(t.params) : "all"));
  const chain = data.chain.filter((m) => data.trials.some((t) => t.phases[m]));
  const head = clear(root.querySelector("#phases-table thead"));
  head.append(el("tr", {}, el("th", {}, "trial"), chain.map((m) => el("th", {}, name(data, m))),
    el("th", {}, "end to end"), el("th", {}, "runs")));
  const body = clear(root.querySelector("#phases-table tbody"));
  data.trials.forEach((t, i) => {
    body.append(el("tr", {}, el("td", {}, labels[i]),
      chain.map((m) => el("td", { class: "num" }, secs(t.phases[m] ? t.phases[m].median : NaN))),
      el("td", { class: "num" }, secs((t.phases.end_to_end_seconds || {}).median)),
      el("td", {}, t.runs.map((r) => el("a", { href: `/runs/${encodeURIComponent(r)}/timeline` }, r))
        .flatMap((a, k) => (k ? [" ", a] : [a])))));
  });
  const plot = root.querySelector("#phases-plot");
  if (!data.trials.length) {
    plot.append(el("p", { class: "muted" }, "No run of this experiment has a timeline."));
    return;
  }
  const Plotly = await loadPlotly();
  const traces = chain.map((m) => ({ type: "bar", x: labels, y: data.trials.map((t) => (t.phases[m] ? t.phases[m].median : 0)),
    name: name(data, m), marker: { color: data.colours[m] || "#333" },
    hovertemplate: `${name(data, m)}: %{y:.3f} s<extra>%{x}</extra>` }));
  const draw = () => Plotly.react(plot, traces, plotLayout("phases of each trial (median)", {
    barmode: "stack", legend: { orientation: "h", y: -0.22, traceorder: "normal" },
    yaxis: { title: { text: "seconds" } } }), PLOT_CONFIG);
  await draw();
  plot.dataset.rendered = "1";
  onThemeChange(draw);
}

const run = document.getElementById("timeline-page");
const experiment = document.getElementById("phases-page");
if (run) runPage(run).catch((e) => showError(run.querySelector("#timeline-error"), e));
if (experiment) phasesPage(experiment).catch((e) => showError(experiment.querySelector("#phases-error"), e));
