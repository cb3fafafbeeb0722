// A series' history: the changes found (a table) and the medians per trial with CI bands (SVG),
// from /api/history/<series> — the same analysis as `kubebench history`.
import { el, fmtParams, fmtPlain, fmtTime, getJson, pageConfig, send, showError, showFlash, takePrefetched } from "./common.js";
import { drawHistory } from "./history_chart.js";
import { drawEmpty } from "./plots.js";

const root = document.getElementById("history");
const series = root.dataset.series;
const errorBox = document.getElementById("history-error");
const metricSelect = document.getElementById("history-metric");

const pct = (x) => (x === null || x === undefined ? "–" : `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`);

function apiPath() {
  const given = new URLSearchParams(window.location.search);
  const query = new URLSearchParams();
  if (given.get("metric")) query.set("metric", given.get("metric"));
  for (const t of given.getAll("trial")) query.append("trial", t);
  return `/api/history/${encodeURIComponent(series)}${String(query) ? `?${query}` : ""}`;
}

function expLink(id) {
  return el("a", { href: `/experiments/${encodeURIComponent(id)}` }, id);
}

function labelsText(labels) {
  return Object.entries(labels || {}).map(([k, v]) => `${k}=${v}`).join(" ");
}

function renderChanges(result) {
  const table = document.getElementById("changes-table");
  const head = el("tr", {}, ...["trial", "at experiment", "when", "between", "change", "90% CI", "p", "verdict", "actions"]
    .map((h) => el("th", {}, h)));
  const rows = [];
  for (const trial of result.trials) {
    for (const c of trial.changes) {
      const verdict = c.accepted ? `accepted${c.note ? `: ${c.note}` : ""}` : c.verdict;
      rows.push(el("tr", { dataset: { verdict: c.accepted ? "accepted" : c.verdict } },
        el("td", {}, fmtParams(trial.params) || "all"), el("td", {}, expLink(c.experiment)),
        el("td", {}, fmtTime(c.created_at)), el("td", { title: c.environment.join("\n") }, c.between),
        el("td", { class: "num" }, pct(c.change)),
        el("td", { class: "num" }, c.change_ci[0] === null ? "–" : `${pct(c.change_ci[0])} … ${pct(c.change_ci[1])}`),
        el("td", { class: "num" }, fmtPlain(c.p_value)),
        el("td", {}, el("span", { class: `badge ${c.accepted ? "succeeded" : c.verdict === "regressed" ? "failed" : "succeeded"}` }, verdict)),
        el("td", { class: "actions" }, ...actions(result, c))));
    }
  }
  if (!rows.length) {
    const points = result.trials.reduce((n, t) => n + t.n_points, 0);
    rows.push(el("tr", { class: "placeholder" }, el("td", { colspan: 9 }, `No change point in ${points} points of ${result.trials.length} trial(s).`)));
  }
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
  table.dataset.ready = "1";
  if (!performance.getEntriesByName("history-ready").length) performance.mark("history-ready");
}

/** What to do about a change: compare the experiments on either side of it, or accept it as intended. */
function actions(result, change) {
  const compare = el("a", { class: "button secondary small compare-change",
    href: `/compare?${new URLSearchParams({ a: change.before, b: change.experiment, metric: result.metric })}`,
    title: `${change.before} (before) against ${change.experiment} (after)` }, "compare before/after");
  if (change.accepted || pageConfig().read_only) return [compare];
  const accept = el("button", { type: "button", class: "secondary small accept-change" }, "accept…");
  accept.addEventListener("click", () => accept.replaceWith(acceptForm(result, change)));
  return [compare, " ", accept];
}

/** An inline form: why the level changed, then the same as `kubebench history accept --at … --note …`. */
function acceptForm(result, change) {
  const note = el("input", { type: "text", class: "accept-note", placeholder: "why the level changed",
    "aria-label": `Why the level changed at ${change.experiment}` });
  const form = el("form", { class: "accept-form" }, note, " ", el("button", { type: "submit", class: "small" }, "accept"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await send("POST", `/api/history/${encodeURIComponent(series)}/accept`,
        { experiment: change.experiment, metric: result.metric, note: note.value.trim() });
      showFlash(`Accepted the change at ${change.experiment}.`);
      load();
    } catch (error) {
      showError(errorBox, error);
    }
  });
  setTimeout(() => note.focus(), 0);
  return form;
}

function renderMetrics(result) {
  metricSelect.replaceChildren(...result.metrics.map((m) => el("option", { value: m, selected: m === result.metric }, m)));
}

function renderChart(result) {
  const node = document.getElementById("history-chart");
  if (!result.trials.length) {
    drawEmpty(node, "Nothing to plot.");
    return;
  }
  drawHistory(node, result.figure, Math.max(360, Math.min(720, 300 + 20 * result.trials.length)));
  if (!performance.getEntriesByName("history-plotted").length) performance.mark("history-plotted");
}

async function load() {
  try {
    const path = apiPath();
    const result = await (takePrefetched(path) || getJson(path));
    renderMetrics(result);
    renderChanges(result);
    root.dataset.ready = "1";
    renderChart(result);
  } catch (error) {
    showError(errorBox, error);
    root.dataset.ready = "1";
  }
}

metricSelect.addEventListener("change", () => {
  const query = new URLSearchParams(window.location.search);
  query.set("metric", metricSelect.value);
  window.location.search = String(query);
});
load();
