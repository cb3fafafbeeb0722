// One experiment: live progress (server-sent events, polling as a fallback), cancel, trials with
// statistics, plots, runs and the spec.
import {
  badge, clear, el, fmtDuration, fmtNum, fmtPercent, fmtShort, fmtSi, fmtTime, fmtValue, getJson, headerUnit, metricUnit,
  pageConfig, progressBar, send, setStateBadge, showError, showFlash, sortableHead,
} from "./common.js";
import { SCALING, distributions, draw, drawEmpty, metricVsParameter, plotBox, pointLabel, scalingCurve } from "./plots.js";

const root = document.getElementById("experiment");
const id = root.dataset.experimentId;
const base = `/api/experiments/${encodeURIComponent(id)}`;
const errorBox = document.getElementById("exp-error");
const metricSelect = document.getElementById("metric-select");
const config = pageConfig();
let current = null; // the last experiment detail fetched
let events = null;
let refreshTimer = null;
let lastCounts = "";
let polling = false; // no event stream: the page polls instead

async function refresh() {
  try {
    current = await getJson(base);
    errorBox.hidden = true;
    render(current);
  } catch (error) {
    showError(errorBox, error);
  }
}

function render(exp) {
  document.getElementById("exp-name").textContent = exp.name;
  document.getElementById("exp-meta").textContent =
    `${exp.backend} · created ${fmtTime(exp.created_at)} · updated ${fmtTime(exp.updated_at)}`;
  renderContext(exp);
  const description = document.getElementById("exp-description");
  description.textContent = exp.description || "";
  description.hidden = !exp.description;
  const cost = document.getElementById("exp-cost");
  cost.textContent = exp.cost ? `Cost (median of the runs): ${exp.cost}` : "";
  cost.hidden = !exp.cost;
  showProgress(exp);
  showEta(exp);
  renderResume(exp);
  renderFailures(exp);
  fillMetrics(exp);
  renderTrials(exp, metric());
  renderRuns(exp, metric());
  renderRunnerLog(exp);
  document.getElementById("spec-view").textContent = exp.spec_text || "";
  drawPlots(exp, metric());
  drawServing(exp);
  drawDecisions(exp);
  if (isLive(exp) && !events && !polling) follow();
  root.dataset.ready = "1";
}

/** Labels (version, commit), tags and the note: the context people add, shown where they look. */
function renderContext(exp) {
  const context = document.getElementById("exp-context");
  const labels = Object.entries(exp.labels || {}).map(([k, v]) => el("span", { class: "chip label", dataset: { label: k } }, `${k}=${v}`));
  const tags = (exp.tags || []).map((t) => el("span", { class: "chip tag", dataset: { tag: t } }, `#${t}`));
  context.replaceChildren(...labels, ...tags);
  context.hidden = !(labels.length || tags.length);
  const note = document.getElementById("exp-note");
  note.textContent = exp.note || "";
  note.hidden = !exp.note;
}

/** The time left, from the runs that ended: their median duration × the runs left ÷ the runs in flight. */
function showEta(exp) {
  const line = document.getElementById("exp-eta");
  const counts = exp.runs_by_status || {};
  const left = (counts.pending || 0) + (counts.running || 0);
  const ended = exp.runs.filter((r) => r.status === "succeeded" || r.status === "failed").map((r) => r.duration_s)
    .filter(Number.isFinite).sort((a, b) => a - b);
  const live = exp.state === "running";
  line.hidden = !(live && left && ended.length);
  if (line.hidden) return;
  const typical = ended[ended.length >> 1];
  const width = Math.max(1, Math.min(exp.parallelism || 1, left));
  line.textContent = `about ${fmtDuration((typical * left) / width)} left (${left} runs at ${fmtDuration(typical)} each, ${width} at a time)`;
}

/** An interrupted experiment: the command that resumes it, to paste where its spec is. */
function renderResume(exp) {
  const box = document.getElementById("exp-resume");
  box.hidden = !exp.resume;
  document.getElementById("exp-resume-command").textContent = exp.resume || "";
}

/** Failed runs: how many, the last line of the latest one's log (where the cause usually is), and where to read more. */
function renderFailures(exp) {
  const box = document.getElementById("exp-failures");
  const failed = exp.runs.filter((r) => r.status === "failed" || r.status === "timeout");
  box.hidden = !failed.length;
  if (!failed.length) return;
  const latest = failed.reduce((a, b) => ((b.finished_at || 0) > (a.finished_at || 0) ? b : a));
  box.replaceChildren(el("p", {}, el("strong", {}, `${failed.length} failed run${failed.length === 1 ? "" : "s"}`),
    `: ${latest.reason || "no reason recorded"}`),
  latest.log_line ? el("pre", { class: "code log-line" }, latest.log_line) : null,
  el("p", { class: "muted" }, "The whole log: ", el("a", { href: `/runs/${encodeURIComponent(latest.run_id)}` }, latest.run_id),
    ", or ", el("code", {}, `kubebench show ${exp.id}`), "."));
}

function isLive(exp) {
  return exp.state === "running" || (exp.state === "pending" && exp.launched_here);
}

/** State badge, progress bar and Cancel from an ExperimentDetail or an SSE progress event. */
function showProgress(progress) {
  const { state, runs_by_status: runsByStatus } = progress;
  setStateBadge(document.getElementById("exp-state"), progress);
  root.dataset.state = state;
  root.dataset.partial = progress.partial ? "1" : "0";
  const total = Object.values(runsByStatus || {}).reduce((a, b) => a + b, 0);
  clear(document.getElementById("exp-progress")).append(progressBar(runsByStatus, total));
  document.getElementById("exp-progress").dataset.state = state;
  // only what this server launched can be cancelled here (a `kubebench run` is stopped where it runs),
  // and what a runner that is gone (killed) left running
  const cancel = document.getElementById("cancel-experiment");
  const cancellable = (state === "running" && current && current.launched_here) || (current && current.runner === "gone");
  cancel.hidden = !(cancellable && !config.read_only);
}

function renderRunnerLog(exp) {
  const section = document.getElementById("runner-log-section");
  section.hidden = !exp.runner_log;
  document.getElementById("runner-log").textContent = exp.runner_log || "";
  // a runner that stopped badly: its last lines say why, so they are open
  if (exp.runner_log && exp.state === "failed" && !section.dataset.seen) {
    document.getElementById("runner-log-details").open = true;
    section.dataset.seen = "1";
  }
}

// ---- live progress --------------------------------------------------------------------------------
function follow() {
  if (!window.EventSource) { poll(); return; }
  events = new EventSource(`${base}/events`);
  root.dataset.live = "1";
  const onProgress = (message) => {
    const data = JSON.parse(message.data);
    showProgress(data);
    const counts = JSON.stringify(data.runs_by_status);
    if (counts !== lastCounts) { lastCounts = counts; scheduleRefresh(); }
  };
  events.addEventListener("progress", onProgress);
  events.addEventListener("done", (message) => {
    onProgress(message);
    stopFollowing();
    clearTimeout(refreshTimer);
    refreshTimer = null;
    refresh();
  });
  events.onerror = () => {
    // The stream ended without "done" (server restarted, proxy cut it): fall back to polling.
    if (events && events.readyState === EventSource.CLOSED) { stopFollowing(); poll(); }
  };
}

function stopFollowing() {
  if (events) events.close();
  events = null;
  root.dataset.live = "0";
}

async function poll() {
  polling = true;
  await refresh();
  if (current && isLive(current)) setTimeout(poll, 2000);
}

// Runs finishing change the tables and plots: refetch at once when a run ends (the table kept up
// with the bar a run late, review 2026-12-02 #25), then at most every 1.5 s while runs keep ending.
let refreshAgain = false;

function scheduleRefresh() {
  if (refreshTimer) { refreshAgain = true; return; }
  refresh();
  refreshTimer = setTimeout(function settle() {
    refreshTimer = null;
    if (refreshAgain) { refreshAgain = false; scheduleRefresh(); }
  }, 1500);
}

document.getElementById("cancel-experiment").addEventListener("click", async () => {
  if (!window.confirm(`Cancel experiment ${id}? Its running runs are stopped.`)) return;
  try {
    await send("POST", `${base}/cancel`);
    showFlash(`Cancelling ${id}…`);
  } catch (error) {
    showFlash(`Could not cancel: ${error.message}`, true);
  }
});

// ---- metric choice -------------------------------------------------------------------------------
function metric() {
  const chosen = metricSelect.value;
  return chosen || (current && (current.primary_metric || (current.metrics[0] && current.metrics[0].name))) || null;
}

function metricInfo(exp, name) {
  return exp.metrics.find((m) => m.name === name) || { name, goal: "maximize" };
}

/** The unit of a metric: declared by the spec, else read from its name (``*_bytes``, ``*_seconds``). */
function unitOf(exp, name) {
  return metricUnit(name, metricInfo(exp, name).unit);
}

/** `` (images/s)`` after a column's name when its cells leave the unit to the header. */
function inHeader(exp, name) {
  const unit = headerUnit(unitOf(exp, name));
  return unit ? ` (${unit})` : "";
}

function fillMetrics(exp) {
  const names = exp.metrics.map((m) => m.name);
  if (metricSelect.options.length === names.length) return;
  const wanted = new URLSearchParams(window.location.search).get("metric") || exp.primary_metric || names[0];
  metricSelect.replaceChildren(...names.map((n) => el("option", { value: n, selected: n === wanted }, n)));
  document.getElementById("metric-choice").hidden = names.length < 2;
}

metricSelect.addEventListener("change", () => {
  const url = new URL(window.location.href);
  url.searchParams.set("metric", metricSelect.value);
  history.replaceState(null, "", url);
  if (current) render(current);
});

// ---- tables --------------------------------------------------------------------------------------
function renderTrials(exp, name) {
  const table = document.getElementById("trials-table");
  const swept = exp.swept || [];
  const cancelled = exp.trials.some((t) => t.cancelled);
  const columns = [{ label: "#", num: true }, ...swept.map((p) => ({ label: p })),
    { label: "runs", num: true, title: "the trial's counted runs (warm-up runs excluded), whatever their state" },
    // not "n": a parameter may be called n (review 2026-12-02 #29)
    { label: "ok runs", num: true, title: "runs that gave a value of this metric (the statistics are over these)" },
    { label: name ? `${name}${inHeader(exp, name)} mean ± CI` : "mean ± CI", num: true,
      title: "mean ± half the 95% confidence interval (Student t); no interval below 2 values" },
    { label: "median", num: true }, { label: "CV", num: true, title: "coefficient of variation: stdev / mean" },
    { label: "min", num: true }, { label: "max", num: true },
    { label: "failed", num: true, title: "runs that failed or timed out" },
    ...(exp.cost_columns || []).map((c) => ({ label: c.heading, num: true, title: `median ${c.name} of the trial's runs` })),
    ...(cancelled ? [{ label: "cancelled", num: true, title: "runs cancelled (most never started)" }] : [])];
  const body = el("tbody");
  const unit = name ? unitOf(exp, name) : "";
  const num = (x) => fmtShort(x, unit);
  for (const trial of exp.trials) {
    const s = (name && trial.summary && trial.summary[name]) || {};
    const half = Number.isFinite(s.ci_high) && Number.isFinite(s.ci_low) ? (s.ci_high - s.ci_low) / 2 : null;
    body.append(el("tr", { dataset: { trial: trial.trial_id } },
      el("td", { class: "num" }, String(trial.index)),
      swept.map((p) => el("td", {}, fmtValue(trial.params[p]))),
      el("td", { class: "num" }, String(trial.runs)),
      el("td", { class: "num" }, fmtNum(s.n)),
      el("td", { class: "num", "data-sort": s.mean ?? "", title: half === null ? null : `95% CI [${fmtSi(s.ci_low, unit)}, ${fmtSi(s.ci_high, unit)}]` },
        half === null ? num(s.mean) : `${num(s.mean)} ± ${num(half)}`),
      el("td", { class: "num", "data-sort": s.median ?? "" }, num(s.median)),
      el("td", { class: "num", "data-sort": s.cv ?? "" }, fmtPercent(s.cv)),
      el("td", { class: "num", "data-sort": s.min ?? "" }, num(s.min)),
      el("td", { class: "num", "data-sort": s.max ?? "" }, num(s.max)),
      el("td", { class: `num${trial.failed ? " bad" : ""}` }, String(trial.failed)),
      (exp.cost_columns || []).map((c) => el("td", { class: "num", dataset: { cost: c.name } },
        fmtUsd(((trial.summary || {})[c.name] || {}).median))),
      cancelled ? el("td", { class: "num" }, String(trial.cancelled || 0)) : null));
  }
  if (!exp.trials.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: columns.length }, "No trials.")));
  table.replaceChildren(sortableHead(table, columns), body);
  const fixed = Object.keys((exp.trials[0] || {}).params || {}).filter((p) => !swept.includes(p));
  const note = document.getElementById("fixed-params");
  note.textContent = fixed.length ? `Fixed: ${fixed.map((p) => `${p}=${fmtValue(exp.trials[0].params[p])}`).join(", ")}` : "";
  note.hidden = !fixed.length;
}

/** ``$0.0123``: three significant digits, as the CLI writes a cost. */
function fmtUsd(x) {
  if (!Number.isFinite(x)) return "–";
  if (x === 0) return "$0";
  return `$${x.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x)))))}`;
}

function renderRuns(exp, name) {
  const table = document.getElementById("runs-table");
  const swept = exp.swept || [];
  const columns = [{ label: "run" }, { label: "trial" }, { label: "repeat", num: true }, { label: "status" },
    { label: "attempts", num: true }, { label: "started" }, { label: "duration", num: true }, { label: "exit", num: true },
    { label: name ? `${name}${inHeader(exp, name)}` : "metric", num: true }, { label: "reason" }];
  const body = el("tbody");
  for (const run of exp.runs) {
    const value = name && run.metrics ? run.metrics[name] : undefined;
    body.append(el("tr", { dataset: { run: run.run_id, status: run.status } },
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(run.run_id)}`, class: "run-link" }, run.run_id)),
      el("td", {}, swept.length ? pointLabel(run.params, swept) : "–"),
      el("td", { class: "num" }, run.warmup ? `${run.repeat} (warm-up)` : String(run.repeat)),
      el("td", {}, badge(run.status)),
      el("td", { class: "num" }, String(run.attempts ?? "")),
      el("td", { "data-sort": run.started_at ?? "" }, fmtTime(run.started_at)),
      el("td", { class: "num", "data-sort": run.duration_s ?? "" }, fmtDuration(run.duration_s)),
      el("td", { class: "num" }, run.exit_code === null || run.exit_code === undefined ? "–" : String(run.exit_code)),
      el("td", { class: "num", "data-sort": value ?? "" }, name ? fmtShort(value, unitOf(exp, name)) : "–"),
      el("td", { class: "reason" }, run.reason || "",
        run.log_line ? el("div", { class: "log-line muted", title: "the last line of its log" }, run.log_line) : null)));
  }
  if (!exp.runs.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: columns.length }, "No runs.")));
  table.replaceChildren(sortableHead(table, columns), body);
}

// ---- plots ---------------------------------------------------------------------------------------
// Each render draws the plots again; only the latest drawing, once done, marks them rendered (with the
// state it drew), so that a finished experiment's plots are known to show its final runs.
let plotsDrawn = 0;

async function drawPlots(exp, name) {
  const note = document.getElementById("plots-note");
  const plots = document.getElementById("plots");
  const drawing = ++plotsDrawn;
  plots.dataset.rendered = "0";
  if (!name) {
    note.textContent = "The experiment declares no metric: nothing to plot.";
    note.hidden = false;
    return;
  }
  const info = metricInfo(exp, name);
  const swept = exp.swept || [];
  note.hidden = swept.length > 0;
  note.textContent = "No parameter is swept: the plot shows the distribution of the runs.";
  const empty = emptyMessage(exp, name);
  try {
    const group = document.getElementById("plot-params");
    // every box first, so that each chart is drawn at its final width in the grid
    const boxes = swept.map((parameter) => plotBox(group, `plot-param-${parameter.replace(/[^a-zA-Z0-9_-]/g, "_")}`));
    for (const [i, parameter] of swept.entries()) {
      boxes[i].dataset.param = parameter;
      const figure = metricVsParameter(exp.trials, swept, parameter, name, unitOf(exp, name));
      if (figure) await draw(boxes[i], figure); else drawEmpty(boxes[i], `${name} vs ${parameter}: ${empty}`);
    }
    const dist = distributions(exp.trials, exp.runs, swept, name, unitOf(exp, name));
    const distBox = document.getElementById("plot-dist");
    if (dist) await draw(distBox, dist); else drawEmpty(distBox, `${name} per trial: ${empty}`);
    const scaling = swept.find((p) => SCALING.test(p));
    const figure = scaling ? scalingCurve(exp.trials, swept, scaling, name, info.goal, unitOf(exp, name)) : null;
    const scalingBox = document.getElementById("plot-scaling");
    scalingBox.hidden = !figure;
    if (figure) await draw(scalingBox, figure);
    if (drawing === plotsDrawn) {
      plots.dataset.state = exp.state;
      plots.dataset.rendered = "1";
    }
  } catch (error) {
    showError(errorBox, error);
  }
}

// ---- serving: latency and goodput vs load, the throughput–interactivity frontier, capacity -------
const SERVING_METRIC = /^(ttft_|tpot_|output_tokens_per_s)/;
let servingKey = "";

async function drawServing(exp) {
  if (!(exp.metrics || []).some((m) => SERVING_METRIC.test(m.name))) return;
  const key = JSON.stringify(exp.runs_by_status || {});
  if (key === servingKey) return; // nothing finished since the last drawing
  servingKey = key;
  try {
    const view = await getJson(`${base}/serving`);
    const section = document.getElementById("serving-section");
    section.hidden = !view.figures.length;
    const question = document.getElementById("serving-question");
    question.hidden = !view.question;
    question.textContent = view.question ? `Capacity: ${view.question}` : "";
    const table = document.getElementById("capacity-table");
    table.hidden = !view.capacity.length;
    if (view.capacity.length) {
      const columns = ["setting", "status", "meets at", "fails at", "estimate", "95% interval", "probes", "runs"];
      const num = (v) => (v === null || v === undefined ? "–" : fmtNum(v));
      const body = el("tbody", {}, ...view.capacity.map((row) => el("tr", {},
        el("td", {}, row.setting), el("td", {}, row.status), el("td", {}, num(row.meets)), el("td", {}, num(row.fails)),
        el("td", {}, num(row.estimate)), el("td", {}, row.ci ? `${fmtNum(row.ci[0])} … ${fmtNum(row.ci[1])}` : "–"),
        el("td", {}, String(row.probes)), el("td", {}, String(row.runs)))));
      table.replaceChildren(el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", {}, c)))), body);
    }
    const plots = document.getElementById("serving-plots");
    const boxes = view.figures.map((_, i) => plotBox(plots, `serving-plot-${i}`));
    for (const [i, figure] of view.figures.entries()) {
      const { template, ...layout } = figure.layout; // the page's theme, not plotly's default template
      // the legend's room is made by draw() for the box's width; the report's margin is for a wide page
      await draw(boxes[i], { data: figure.data, layout: { ...layout, height: 380, margin: { ...layout.margin, b: 56 } } });
    }
    plots.dataset.rendered = "1";
  } catch (error) {
    showError(errorBox, error);
  }
}

// ---- sequential decisions (run --decide-against): verdict, runs it took, change and its interval --
let decisionsKey = "";

async function drawDecisions(exp) {
  const key = JSON.stringify(exp.runs_by_status || {});
  if (key === decisionsKey) return; // nothing finished since the last drawing
  decisionsKey = key;
  try {
    const view = await getJson(`${base}/decisions`);
    const section = document.getElementById("decisions-section");
    section.hidden = !view.decisions.length;
    if (!view.decisions.length) return;
    document.getElementById("decisions-summary").textContent =
      `On ${view.metric} against ${view.against}: ${view.summary}`;
    document.getElementById("decisions-design").textContent = `Sequential: ${view.design}`;
    const names = [...new Set(view.decisions.flatMap((d) => Object.keys(d.params || {})))];
    const swept = names.filter((n) => new Set(view.decisions.map((d) => JSON.stringify(d.params[n]))).size > 1);
    const columns = [...swept, "verdict", "change", "runs", "base runs", "why"];
    const body = el("tbody", {}, ...view.decisions.map((d) => el("tr", { dataset: { verdict: d.verdict } },
      ...swept.map((n) => el("td", {}, fmtValue(d.params[n]))),
      el("td", {}, badge(d.verdict)), el("td", {}, d.change_text), el("td", {}, d.runs_text),
      el("td", {}, String(d.base_runs)), el("td", { class: "muted" }, d.reason))));
    document.getElementById("decisions-table").replaceChildren(
      el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", {}, c)))), body);
  } catch (error) {
    showError(errorBox, error);
  }
}

/** Why a chart of ``name`` has nothing to show yet (or will never have). */
function emptyMessage(exp, name) {
  const counts = exp.runs_by_status || {};
  const unfinished = (counts.pending || 0) + (counts.running || 0);
  if (!exp.runs.length) return "no runs.";
  if (unfinished && !counts.succeeded) return "no run has finished with a value yet; the chart appears when one does.";
  if (!counts.succeeded) return "no run succeeded, so there is no value to plot (see the runs' reasons below).";
  return `no succeeded run reported ${name}.`;
}

// ---- link to compare ------------------------------------------------------------------------------
async function compareLink() {
  const name = root.dataset.experimentName;
  try {
    const page = await getJson(`/api/experiments?${new URLSearchParams({ name, limit: 10 })}`);
    const me = page.items.find((item) => item.id === id);
    const other = page.items.find((item) => item.id !== id);
    if (!other) return;
    const [a, b] = me && other.created_at > me.created_at ? [id, other.id] : [other.id, id];
    const link = document.getElementById("compare-link");
    link.href = `/compare?${new URLSearchParams({ a, b })}`;
    link.textContent = `Compare with ${other.id}`;
  } catch { /* the plain link stays */ }
}

refresh();
compareLink();
