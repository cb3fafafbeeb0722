// Compare two experiments: pick A (base) and B (candidate), most recent first with a search; the
// trials matched by parameters are shown in a table with verdicts and in two charts.
import {
  badge, clear, el, fmtNum, fmtPlain, fmtShort, fmtSi, fmtTime, fmtValue, getJson, headerUnit, showError,
} from "./common.js";
import { compareBars, draw, drawEmpty, ratioChart } from "./plots.js";

const form = document.getElementById("compare-form");
const selectA = document.getElementById("compare-a");
const selectB = document.getElementById("compare-b");
const metricSelect = document.getElementById("compare-metric");
const search = document.getElementById("compare-search");
const errorBox = document.getElementById("compare-error");
const LIST_LIMIT = 200;
let searchTimer = null;

function optionText(item) {
  return `${item.id} · ${item.name} · ${item.state} · ${fmtTime(item.created_at)}`;
}

// Both selects list the experiments found (newest first); chosen ones stay even when filtered out.
function fillSelects(items) {
  for (const [select, wanted] of [[selectA, selectA.value || form.dataset.a], [selectB, selectB.value || form.dataset.b]]) {
    const options = items.map((item) => el("option", { value: item.id }, optionText(item)));
    if (wanted && !items.some((item) => item.id === wanted)) options.unshift(el("option", { value: wanted }, wanted));
    if (!options.length) options.push(el("option", { value: "" }, "no experiment found"));
    select.replaceChildren(...options);
    if (wanted) select.value = wanted;
  }
  if (!form.dataset.a && !form.dataset.b && !selectB.dataset.touched && items.length > 1) {
    // nothing chosen yet: the newest experiment as candidate against the one before it
    selectA.value = items[1].id;
    selectB.value = items[0].id;
  }
}

async function loadOptions(q = "") {
  const params = new URLSearchParams({ limit: LIST_LIMIT });
  if (q) params.set("q", q);
  try {
    const page = await getJson(`/api/experiments?${params}`);
    fillSelects(page.items);
    form.dataset.ready = "1";
  } catch (error) {
    showError(errorBox, error);
  }
}

async function loadMetrics() {
  if (!selectA.value) return;
  try {
    const exp = await getJson(`/api/experiments/${encodeURIComponent(selectA.value)}`);
    const wanted = metricSelect.value || new URLSearchParams(window.location.search).get("metric") || "";
    metricSelect.replaceChildren(el("option", { value: "" }, `primary${exp.primary_metric ? ` (${exp.primary_metric})` : ""}`),
      ...exp.metrics.map((m) => el("option", { value: m.name, selected: m.name === wanted }, m.name)));
  } catch { /* the primary metric stays the choice */ }
}

function rowLabels(rows) {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r.params || {})))];
  const varying = keys.filter((k) => new Set(rows.map((r) => JSON.stringify((r.params || {})[k]))).size > 1);
  const shown = varying.length ? varying : keys;
  return rows.map((r) => shown.map((k) => `${k}=${fmtValue((r.params || {})[k])}`).join(", ") || "all");
}

// The ratio is of medians (kubebench.analyse.compare): each side shows its median, with its range
// (min–max) beside it, so that a row adds up: ratio = B median / A median. The mean and its CI are
// on hover.
function median(s, unit) {
  if (!s || s.median === null || s.median === undefined) return el("span", {}, "–");
  const f = (x) => fmtShort(x, unit);
  const range = Number.isFinite(s.min) && Number.isFinite(s.max) && s.n > 1 ? ` [${f(s.min)}–${f(s.max)}]` : "";
  const mean = Number.isFinite(s.mean)
    ? `mean ${fmtSi(s.mean, unit)}${Number.isFinite(s.ci_low) ? `, 95% CI of the mean [${fmtSi(s.ci_low, unit)}, ${fmtSi(s.ci_high, unit)}]` : ""}`
    : null;
  return el("span", { title: mean, class: "median" }, f(s.median), range ? el("span", { class: "muted" }, range) : null);
}

const pct = (x) => (Number.isFinite(x) ? `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%` : "–");

/** ``90% CI``: the level of the comparison's CIs (1 − 2α), as the API gives it. */
function ciLabel(result) {
  return `${Math.round((result.confidence ?? 0.9) * 100)}% CI`;
}

// The verdict and the change come first: on a phone they are what shows without a swipe (review 2026-12-02 #26).
function renderTable(result, rows) {
  const table = document.getElementById("compare-table");
  const shown = headerUnit(result.unit);
  const unit = shown ? ` (${shown})` : "";
  const columns = [["trial"], ["verdict", "why: hover, or the reasons under the table"],
    ["change", "relative change of the medians, positive = better for the goal", true],
    ["ratio B/A", "ratio of the medians, candidate / base", true],
    [ciLabel(result), `${ciLabel(result)} of the ratio B / A (Yuen's trimmed t-test on log values): the verdict is read off it`, true],
    ["p", "one-sided p-value in the direction B moved", true], ["A n", "", true],
    [`A median${unit} [min–max]`, "median of A's runs; hover a value for the mean and its CI", true], ["B n", "", true],
    [`B median${unit} [min–max]`, "median of B's runs; hover a value for the mean and its CI", true]];
  const head = el("thead", {}, el("tr", {}, columns.map(([label, title, num]) => el("th", {
    class: num ? "num" : null, scope: "col", title: title || null }, label))));
  const body = el("tbody");
  for (const row of rows) {
    const ci = Number.isFinite(row.ci_low) && Number.isFinite(row.ci_high) ? `[${fmtPlain(row.ci_low, 3)}, ${fmtPlain(row.ci_high, 3)}]` : "–";
    body.append(el("tr", { dataset: { verdict: row.verdict || "" } },
      el("td", {}, row.label),
      el("td", { title: row.reason || null, class: "verdict" }, badge(row.verdict || "–")),
      el("td", { class: "num change" }, pct(row.change)),
      el("td", { class: "num" }, fmtPlain(row.ratio, 3)), el("td", { class: "num" }, ci),
      el("td", { class: "num" }, fmtPlain(row.p_value)),
      el("td", { class: "num" }, fmtNum(row.a && row.a.n)), el("td", { class: "num a-median" }, median(row.a, result.unit)),
      el("td", { class: "num" }, fmtNum(row.b && row.b.n)), el("td", { class: "num b-median" }, median(row.b, result.unit))));
  }
  if (!rows.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: columns.length }, "No trials in common.")));
  table.replaceChildren(head, body);
}

/** Why each trial is inconclusive (or missing), as the CLI prints it under its table. */
function renderReasons(rows) {
  const list = document.getElementById("compare-reasons");
  const unclear = rows.filter((r) => r.reason && r.verdict !== "improved" && r.verdict !== "regressed" && r.verdict !== "unchanged");
  list.replaceChildren(...unclear.map((r) => el("li", { dataset: { verdict: r.verdict } }, el("strong", {}, r.label), `: ${r.reason}`)));
  list.hidden = !unclear.length;
}

/** What differs between A and B besides their runs: fixed parameters and labels ("slow: 1.0 → 1.3"). */
function renderDifferences(result) {
  const line = document.getElementById("compare-differences");
  const items = (result.differences || []).map((d) => `${d.kind === "label" ? "label " : ""}${d.name}: ` +
    `${d.a === null || d.a === undefined ? "unset" : fmtValue(d.a)} → ${d.b === null || d.b === undefined ? "unset" : fmtValue(d.b)}`);
  line.textContent = items.length ? `A → B: ${items.join(" · ")}` : "";
  line.hidden = !items.length;
}

/** B's sequential decisions (run --decide-against) on this metric: its verdicts of record. */
async function renderSequential(result) {
  const view = await getJson(`/api/experiments/${encodeURIComponent(result.b)}/decisions`);
  const found = view.decisions.filter((d) => d.metric === result.metric);
  document.getElementById("compare-decisions").replaceChildren(...found.map((d) =>
    el("li", { dataset: { verdict: d.verdict } }, el("strong", {}, Object.entries(d.params || {}).map(([k, v]) => `${k}=${fmtValue(v)}`).join(", ") || "the trial"), `: ${d.line}`)));
  document.getElementById("compare-sequential").hidden = !found.length;
}

async function compare() {
  errorBox.hidden = true;
  const a = selectA.value, b = selectB.value;
  if (!a || !b) { showError(errorBox, "Pick two experiments."); return; }
  const params = new URLSearchParams({ a, b });
  if (metricSelect.value) params.set("metric", metricSelect.value);
  const threshold = document.getElementById("compare-threshold").value;
  if (threshold) params.set("threshold", threshold);
  history.replaceState(null, "", `/compare?${params}`);
  const section = document.getElementById("compare-result");
  section.dataset.ready = "0";
  try {
    const result = await getJson(`/api/compare?${params}`);
    const labels = rowLabels(result.rows);
    const rows = result.rows.map((row, i) => ({ ...row, label: labels[i] }));
    const band = `${+(result.threshold * 100).toFixed(2)}%`;
    document.getElementById("compare-summary").textContent =
      `${result.metric}${result.unit ? ` (${result.unit})` : ""}${result.goal ? `, ${result.goal}` : ""}: ` +
      `B = ${result.b} against A = ${result.a}. Ratio = median of B / median of A, with the ${ciLabel(result)} of B / A; ` +
      `a change within ±${band} (the threshold) is not one that matters.` +
      (result.correction ? ` Significance: ${result.correction}.` : "") + (result.cost ? ` ${result.cost[0].toUpperCase()}${result.cost.slice(1)}.` : "");
    const thresholdInput = document.getElementById("compare-threshold");
    thresholdInput.placeholder = String(result.threshold); // the server's default, whatever it is
    const warnings = clear(document.getElementById("compare-warnings"));
    warnings.append(...(result.warnings || []).map((w) => el("li", {}, w)));
    warnings.hidden = !(result.warnings || []).length;
    renderTable(result, rows);
    renderReasons(rows);
    renderDifferences(result);
    await renderSequential(result);
    document.getElementById("compare-older").hidden = !(result.a_created_at > result.b_created_at);
    section.hidden = false;
    section.dataset.ready = "1";
    const chart = document.getElementById("compare-chart");
    if (!rows.length) drawEmpty(chart, "No trial of B has the parameters of a trial of A: nothing to chart.");
    else await draw(chart, compareBars(rows, result.metric, [`A: ${result.a}`, `B: ${result.b}`], result.unit));
    const ratio = ratioChart(rows, result.metric, result.threshold);
    document.getElementById("ratio-chart").hidden = !ratio;
    if (ratio) await draw(document.getElementById("ratio-chart"), ratio);
  } catch (error) {
    showError(errorBox, error);
  }
}

form.addEventListener("submit", (event) => { event.preventDefault(); compare(); });
document.getElementById("compare-swap").addEventListener("click", () => {
  const a = selectA.value;
  selectA.value = selectB.value;
  selectB.value = a;
  selectB.dataset.touched = "1";
  loadMetrics().then(compare);
});
selectA.addEventListener("change", loadMetrics);
selectB.addEventListener("change", () => { selectB.dataset.touched = "1"; });
search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => loadOptions(search.value.trim()), 250);
});

const query = new URLSearchParams(window.location.search);
if (query.get("threshold")) document.getElementById("compare-threshold").value = query.get("threshold");
loadOptions().then(async () => {
  await loadMetrics();
  if (form.dataset.a && form.dataset.b) compare();
});
