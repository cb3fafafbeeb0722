// Compare two experiments: pick A (base) and B (candidate), most recent first with a search; the
// trials matched by parameters are shown in a table with verdicts and in two charts.
import { badge, clear, el, fmtNum, fmtTime, fmtValue, getJson, showError } from "./common.js";
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
function median(s) {
  if (!s || s.median === null || s.median === undefined) return el("span", {}, "–");
  const range = Number.isFinite(s.min) && Number.isFinite(s.max) && s.n > 1 ? ` [${fmtNum(s.min)}–${fmtNum(s.max)}]` : "";
  const mean = Number.isFinite(s.mean)
    ? `mean ${fmtNum(s.mean)}${Number.isFinite(s.ci_low) ? `, 95% CI of the mean [${fmtNum(s.ci_low)}, ${fmtNum(s.ci_high)}]` : ""}`
    : null;
  return el("span", { title: mean, class: "median" }, fmtNum(s.median), range ? el("span", { class: "muted" }, range) : null);
}

function renderTable(result, rows) {
  const table = document.getElementById("compare-table");
  const unit = result.unit ? ` (${result.unit})` : "";
  const labels = ["trial", "A n", `A median${unit} [min–max]`, "B n", `B median${unit} [min–max]`, "ratio B/A", "95% CI",
    "change", "p", "verdict"];
  const head = el("thead", {}, el("tr", {}, labels.map((label, i) => el("th", {
    class: i && i < labels.length - 1 ? "num" : null, scope: "col",
    title: { 2: "median of A's runs; hover a value for the mean and its CI", 4: "median of B's runs; hover a value for the mean and its CI",
      5: "ratio of the medians, candidate / base", 6: "95% bootstrap CI of the ratio of the medians",
      7: "relative change, positive = better for the goal", 8: "two-sided Mann–Whitney p-value" }[i] || null }, label))));
  const body = el("tbody");
  for (const row of rows) {
    const ci = Number.isFinite(row.ci_low) && Number.isFinite(row.ci_high) ? `[${fmtNum(row.ci_low)}, ${fmtNum(row.ci_high)}]` : "–";
    body.append(el("tr", { dataset: { verdict: row.verdict || "" } },
      el("td", {}, row.label),
      el("td", { class: "num" }, fmtNum(row.a && row.a.n)), el("td", { class: "num a-median" }, median(row.a)),
      el("td", { class: "num" }, fmtNum(row.b && row.b.n)), el("td", { class: "num b-median" }, median(row.b)),
      el("td", { class: "num" }, fmtNum(row.ratio)), el("td", { class: "num" }, ci),
      el("td", { class: "num" }, Number.isFinite(row.change) ? `${row.change >= 0 ? "+" : ""}${(row.change * 100).toFixed(1)}%` : "–"),
      el("td", { class: "num" }, fmtNum(row.p_value)),
      el("td", { title: row.reason || null }, badge(row.verdict || "–"))));
  }
  if (!rows.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: labels.length }, "No trials in common.")));
  table.replaceChildren(head, body);
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
      `B = ${result.b} against A = ${result.a}. Ratio = median of B / median of A, with a 95% bootstrap CI; ` +
      `a change within ±${band} (the threshold) is not one that matters.` +
      (result.correction ? ` Significance: ${result.correction}.` : "") + (result.cost ? ` ${result.cost[0].toUpperCase()}${result.cost.slice(1)}.` : "");
    const thresholdInput = document.getElementById("compare-threshold");
    thresholdInput.placeholder = String(result.threshold); // the server's default, whatever it is
    const warnings = clear(document.getElementById("compare-warnings"));
    warnings.append(...(result.warnings || []).map((w) => el("li", {}, w)));
    warnings.hidden = !(result.warnings || []).length;
    renderTable(result, rows);
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
