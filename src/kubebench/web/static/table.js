// The runs table: one row per experiment × trial; choose columns (parameters, metrics, labels,
// environment), sort on any, filter with the query language of /api/table, select rows to compare,
// the best row by a metric highlighted, parallel coordinates of the parameters → that metric, and
// notes and tags on experiments (saved with the server's token).
import { el, fmtShort, fmtSi, fmtTime, fmtValue, getJson, headerUnit, send, showError, showFlash, sortableHead } from "./common.js";
import { drawEmpty } from "./plots.js";
import { svg } from "./sparklines.js";

const form = document.getElementById("table-form");
const queryInput = document.getElementById("table-query");
const limitInput = document.getElementById("table-limit");
const bestSelect = document.getElementById("table-best");
const benchmarkSelect = document.getElementById("table-benchmark");
const errorBox = document.getElementById("table-error");
const table = document.getElementById("runs-table");
const choices = document.getElementById("column-choices");
const compareButton = document.getElementById("compare-selected");
const onlyButton = document.getElementById("only-selected");
const SECTIONS = ["params", "metrics", "labels", "env"];
const DEFAULT_SHOWN = new Set(["params", "metrics", "labels"]);

let data = { rows: [], goals: {}, units: {} };
const selected = new Set();
const hidden = new Set(JSON.parse(localStorage.getItem("kubebench.table.hidden") || "[]"));
let onlySelected = false;

const rowKey = (r) => `${r.experiment.id}#${r.trial}`;

function columnsOf(rows) {
  const found = [];
  for (const section of SECTIONS) {
    const names = [...new Set(rows.flatMap((r) => Object.keys(r[section] || {})))].sort();
    for (const name of names) found.push({ section, name, id: `${section}.${name}` });
  }
  return found;
}

function shown(column) {
  if (hidden.has(column.id)) return false;
  return DEFAULT_SHOWN.has(column.section) || localStorage.getItem(`kubebench.table.show.${column.id}`) === "1";
}

function renderChoices(columns) {
  choices.replaceChildren(...columns.map((c) => el("label", { class: "choice" },
    el("input", { type: "checkbox", checked: shown(c), dataset: { column: c.id }, onchange: (e) => {
      if (e.target.checked) { hidden.delete(c.id); localStorage.setItem(`kubebench.table.show.${c.id}`, "1"); }
      else { hidden.add(c.id); localStorage.removeItem(`kubebench.table.show.${c.id}`); }
      localStorage.setItem("kubebench.table.hidden", JSON.stringify([...hidden]));
      render();
    } }), ` ${c.id}`)));
}

function bestRow(rows, metric) {
  const goal = data.goals[metric] || "maximize";
  let best = null;
  for (const r of rows) {
    const v = r.metrics[metric];
    if (!Number.isFinite(v)) continue;
    if (best === null || (goal === "maximize" ? v > best.metrics[metric] : v < best.metrics[metric])) best = r;
  }
  return best;
}

function cell(value, numeric, unit = "") {
  if (value === undefined || value === null) return el("td", { "data-sort": "" }, "");
  if (numeric && typeof value === "number") return el("td", { class: "num", "data-sort": value }, fmtShort(value, unit));
  return el("td", {}, fmtValue(value));
}

/** A column's heading: ``metrics.latency_p99``, with the unit its cells leave to it. */
function heading(column) {
  const unit = column.section === "metrics" ? headerUnit((data.units || {})[column.name] || "") : "";
  return unit ? `${column.id} (${unit})` : column.id;
}

function noteCell(row) {
  const text = [row.note, ...(row.tags || []).map((t) => `#${t}`)].filter(Boolean).join(" ");
  return el("td", { class: "note" }, el("span", {}, text), " ",
    el("button", { type: "button", class: "secondary small", "aria-label": `Edit note of ${row.experiment.id}`,
      onclick: () => editNote(row) }, "✎"));
}

async function editNote(row) {
  const note = window.prompt(`Note on ${row.experiment.id}`, row.note || "");
  if (note === null) return;
  const tags = window.prompt("Tags (comma-separated)", (row.tags || []).join(", "));
  if (tags === null) return;
  try {
    const saved = await send("PUT", `/api/experiments/${encodeURIComponent(row.experiment.id)}/notes`,
      { note, tags: tags.split(",").map((t) => t.trim()).filter(Boolean) });
    for (const r of data.rows) if (r.experiment.id === row.experiment.id) Object.assign(r, saved);
    render();
    showFlash(`Saved the note of ${row.experiment.id}.`);
  } catch (error) {
    showError(errorBox, error);
  }
}

function render() {
  const columns = columnsOf(data.rows).filter(shown);
  const rows = onlySelected ? data.rows.filter((r) => selected.has(rowKey(r))) : data.rows;
  const metric = bestSelect.value;
  const best = metric ? bestRow(rows, metric) : null;
  const head = sortableHead(table, [{ label: "✓" }, { label: "experiment" }, { label: "created" }, { label: "trial", num: true },
    ...columns.map((c) => ({ label: heading(c), num: c.section === "metrics" })), { label: "tags · note" }]);
  const body = el("tbody", {}, ...rows.map((r) => el("tr", { class: r === best ? "best" : "", dataset: { key: rowKey(r) },
    title: r === best ? `best ${metric} (${data.goals[metric] || "maximize"})` : null },
    el("td", {}, el("input", { type: "checkbox", checked: selected.has(rowKey(r)), "aria-label": `Select ${rowKey(r)}`,
      onchange: (e) => { if (e.target.checked) selected.add(rowKey(r)); else selected.delete(rowKey(r)); updateButtons(); } })),
    el("td", {}, el("a", { href: `/experiments/${encodeURIComponent(r.experiment.id)}` }, r.experiment.id),
      " ", el("a", { href: `/history/${encodeURIComponent(r.experiment.id)}`, class: "muted", title: "history of its series" }, "↗")),
    el("td", { "data-sort": r.experiment.created_at }, fmtTime(r.experiment.created_at)),
    cell(r.trial, true),
    ...columns.map((c) => cell((r[c.section] || {})[c.name], c.section === "metrics", (data.units || {})[c.name])),
    noteCell(r))));
  if (!rows.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: columns.length + 5 }, "No row matches.")));
  table.replaceChildren(head, body);
  table.dataset.ready = "1";
  const cut = data.truncated ? ` Only the newest ${data.experiments} experiments: the table holds at most ${data.total} rows.` : "";
  document.getElementById("table-count").textContent = `${rows.length} rows of ${data.total} (experiment × trial).${cut}`;
  updateButtons();
  renderParcoords(rows, metric);
}

function updateButtons() {
  compareButton.disabled = selected.size < 2;
  onlyButton.disabled = selected.size === 0 && !onlySelected;
}

// Parallel coordinates drawn as SVG here: Plotly's parcoords is WebGL through regl, which compiles its
// shaders with `new Function` and so cannot start under the pages' Content-Security-Policy (no
// 'unsafe-eval'); it drew an empty "no WebGL" box.

/** A dimension of the plot: numbers as they are, anything else as its sorted levels 0, 1, … */
function dimension(label, values) {
  if (values.every((v) => typeof v === "number" && Number.isFinite(v))) {
    const low = Math.min(...values), high = Math.max(...values);
    const unit = (data.units || {})[label] || "";
    return { label, values, low, high, ticks: [[low, fmtSi(low, unit)], [high, fmtSi(high, unit)]] };
  }
  const levels = [...new Set(values.map((v) => fmtValue(v)))].sort();
  return { label, values: values.map((v) => levels.indexOf(fmtValue(v))), low: 0, high: Math.max(1, levels.length - 1),
    ticks: levels.map((level, i) => [i, level]) };
}

function renderParcoords(rows, metric) {
  const node = document.getElementById("parcoords");
  const withMetric = metric && rows.some((r) => Number.isFinite(r.metrics[metric]));
  if (!rows.length || !withMetric) {
    drawEmpty(node, "Choose a metric (Best by) with values to draw parameters against it.");
    return;
  }
  const kept = rows.filter((r) => Number.isFinite(r.metrics[metric]));
  const params = [...new Set(kept.flatMap((r) => Object.keys(r.params)))];
  const dims = [...params.map((p) => dimension(p, kept.map((r) => r.params[p]))),
    dimension(metric, kept.map((r) => r.metrics[metric]))];
  const width = Math.max(320, node.clientWidth || 900), height = 380, top = 40, bottom = 30, side = 70;
  const x = (i) => side + (dims.length > 1 ? (i / (dims.length - 1)) * (width - 2 * side) : (width - 2 * side) / 2);
  const y = (d, v) => top + (1 - (d.high === d.low ? 0.5 : (v - d.low) / (d.high - d.low))) * (height - top - bottom);
  const box = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "parcoords", role: "img",
    "aria-label": `parameters → ${metric}: one line per row` });
  const goal = data.goals[metric], last = dims[dims.length - 1];
  kept.forEach((r, row) => {
    const share = last.high === last.low ? 1 : (r.metrics[metric] - last.low) / (last.high - last.low);
    const good = goal === "minimize" ? 1 - share : share; // yellow is better, as the best row
    const line = svg("polyline", { points: dims.map((d, i) => `${x(i).toFixed(1)},${y(d, d.values[row]).toFixed(1)}`).join(" "),
      fill: "none", stroke: `hsl(${(270 - 210 * good).toFixed(0)} 70% 45%)`, "stroke-width": "1.3", opacity: "0.8" });
    line.append(svg("title", {}, `${r.experiment.id} · ${metric} ${fmtSi(r.metrics[metric], (data.units || {})[metric] || "")}`));
    box.append(line);
  });
  dims.forEach((d, i) => {
    box.append(svg("line", { x1: x(i), x2: x(i), y1: top, y2: height - bottom, stroke: "currentColor", "stroke-width": "1" }));
    box.append(svg("text", { x: x(i), y: top - 18, "text-anchor": "middle", class: "parcoords-label" }, d.label));
    for (const [v, text] of d.ticks) {
      box.append(svg("text", { x: x(i) + 5, y: y(d, v) + 4, class: "parcoords-tick" }, text));
    }
  });
  node.classList.remove("empty");
  delete node.dataset.empty;
  node.replaceChildren(el("h3", { class: "plot-title" }, `parameters → ${metric}`), box);
  node.dataset.rendered = "1";
}

async function load() {
  const query = new URLSearchParams(window.location.search);
  queryInput.value = query.get("q") || "";
  limitInput.value = query.get("limit") || "200";
  errorBox.hidden = true;
  const benchmark = query.get("benchmark") || "";
  try {
    const params = new URLSearchParams({ q: queryInput.value, limit: limitInput.value });
    if (benchmark) params.set("benchmark", benchmark);
    data = await getJson(`/api/table?${params}`);
    // one benchmark at a time (the one run last, unless chosen): every benchmark's columns at once
    // were mostly empty (review 2026-12-02 #17)
    benchmarkSelect.replaceChildren(...data.benchmarks.map((b) => el("option", { value: b, selected: b === data.benchmark }, b)),
      el("option", { value: "*", selected: data.benchmark === "*" }, "every benchmark"));
    const metrics = Object.keys(data.goals);
    const wanted = query.get("best") || bestSelect.value || metrics[0] || "";
    bestSelect.replaceChildren(el("option", { value: "" }, "—"),
      ...metrics.map((m) => el("option", { value: m, selected: m === wanted }, `${m} (${data.goals[m]})`)));
    renderChoices(columnsOf(data.rows));
    render();
  } catch (error) {
    showError(errorBox, error);
    // not "Loading…" forever: the table says why it is empty
    table.replaceChildren(el("tbody", {}, el("tr", { class: "placeholder" }, el("td", {}, `No rows: ${error.message}`))));
    table.dataset.ready = "1";
  }
}

benchmarkSelect.addEventListener("change", () => form.requestSubmit());
form.addEventListener("submit", (event) => {
  event.preventDefault();
  const query = new URLSearchParams({ q: queryInput.value, limit: limitInput.value, best: bestSelect.value,
    benchmark: benchmarkSelect.value });
  history.pushState(null, "", `/table?${query}`);
  load();
});
bestSelect.addEventListener("change", render);
compareButton.addEventListener("click", () => {
  // the older experiment is the base: the newest row is on top, and a regression must read as one
  const created = new Map(data.rows.map((r) => [r.experiment.id, r.experiment.created_at]));
  const ids = [...new Set([...selected].map((k) => k.split("#")[0]))].sort((a, b) => created.get(a) - created.get(b));
  if (ids.length === 2) window.location.href = `/compare?a=${encodeURIComponent(ids[0])}&b=${encodeURIComponent(ids[1])}`;
  else { onlySelected = true; onlyButton.setAttribute("aria-pressed", "true"); render(); }
});
onlyButton.addEventListener("click", () => {
  onlySelected = !onlySelected;
  onlyButton.setAttribute("aria-pressed", String(onlySelected));
  render();
});
window.addEventListener("popstate", load);
load();
