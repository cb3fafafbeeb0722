// The runs table: one row per experiment × trial; choose columns (parameters, metrics, labels,
// environment), sort on any, filter with the query language of /api/table, select rows to compare,
// the best row by a metric highlighted, parallel coordinates of the parameters → that metric, and
// notes and tags on experiments (saved with the server's token).
import { el, fmtNum, fmtTime, fmtValue, getJson, plotLayout, send, showError, showFlash, sortableHead } from "./common.js";
import { draw, drawEmpty } from "./plots.js";

const form = document.getElementById("table-form");
const queryInput = document.getElementById("table-query");
const limitInput = document.getElementById("table-limit");
const bestSelect = document.getElementById("table-best");
const errorBox = document.getElementById("table-error");
const table = document.getElementById("runs-table");
const choices = document.getElementById("column-choices");
const compareButton = document.getElementById("compare-selected");
const onlyButton = document.getElementById("only-selected");
const SECTIONS = ["params", "metrics", "labels", "env"];
const DEFAULT_SHOWN = new Set(["params", "metrics", "labels"]);

let data = { rows: [], goals: {} };
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

function cell(value, numeric) {
  if (value === undefined || value === null) return el("td", { "data-sort": "" }, "");
  if (numeric && typeof value === "number") return el("td", { class: "num", "data-sort": value }, fmtNum(value));
  return el("td", {}, fmtValue(value));
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
    ...columns.map((c) => ({ label: c.id, num: c.section === "metrics" })), { label: "tags · note" }]);
  const body = el("tbody", {}, ...rows.map((r) => el("tr", { class: r === best ? "best" : "", dataset: { key: rowKey(r) },
    title: r === best ? `best ${metric} (${data.goals[metric] || "maximize"})` : null },
    el("td", {}, el("input", { type: "checkbox", checked: selected.has(rowKey(r)), "aria-label": `Select ${rowKey(r)}`,
      onchange: (e) => { if (e.target.checked) selected.add(rowKey(r)); else selected.delete(rowKey(r)); updateButtons(); } })),
    el("td", {}, el("a", { href: `/experiments/${encodeURIComponent(r.experiment.id)}` }, r.experiment.id),
      " ", el("a", { href: `/history/${encodeURIComponent(r.experiment.id)}`, class: "muted", title: "history of its series" }, "↗")),
    el("td", { "data-sort": r.experiment.created_at }, fmtTime(r.experiment.created_at)),
    cell(r.trial, true),
    ...columns.map((c) => cell((r[c.section] || {})[c.name], c.section === "metrics")),
    noteCell(r))));
  if (!rows.length) body.append(el("tr", { class: "placeholder" }, el("td", { colspan: columns.length + 5 }, "No row matches.")));
  table.replaceChildren(head, body);
  table.dataset.ready = "1";
  document.getElementById("table-count").textContent = `${rows.length} rows of ${data.total} (experiment × trial).`;
  updateButtons();
  renderParcoords(rows, metric);
}

function updateButtons() {
  compareButton.disabled = selected.size < 2;
  onlyButton.disabled = selected.size === 0 && !onlySelected;
}

async function renderParcoords(rows, metric) {
  const node = document.getElementById("parcoords");
  const params = [...new Set(rows.flatMap((r) => Object.keys(r.params)))];
  const dims = params.map((p) => {
    const values = rows.map((r) => r.params[p]);
    if (values.every((v) => typeof v === "number")) return { label: p, values };
    const levels = [...new Set(values.map((v) => fmtValue(v)))].sort();
    return { label: p, values: values.map((v) => levels.indexOf(fmtValue(v))), tickvals: levels.map((_, i) => i), ticktext: levels };
  });
  const withMetric = metric && rows.some((r) => Number.isFinite(r.metrics[metric]));
  if (!rows.length || !withMetric) {
    drawEmpty(node, "Choose a metric (Best by) with values to draw parameters against it.");
    return;
  }
  const values = rows.map((r) => (Number.isFinite(r.metrics[metric]) ? r.metrics[metric] : NaN));
  dims.push({ label: metric, values });
  await draw(node, {
    data: [{ type: "parcoords", dimensions: dims,
      line: { color: values, colorscale: "Viridis", reversescale: data.goals[metric] === "minimize", showscale: true } }],
    layout: plotLayout(`parameters → ${metric}`, { height: 420, margin: { l: 60, r: 60, t: 70, b: 30 } }),
  });
}

async function load() {
  const query = new URLSearchParams(window.location.search);
  queryInput.value = query.get("q") || "";
  limitInput.value = query.get("limit") || "200";
  errorBox.hidden = true;
  try {
    data = await getJson(`/api/table?${new URLSearchParams({ q: queryInput.value, limit: limitInput.value })}`);
    const metrics = Object.keys(data.goals);
    const wanted = query.get("best") || bestSelect.value || metrics[0] || "";
    bestSelect.replaceChildren(el("option", { value: "" }, "—"),
      ...metrics.map((m) => el("option", { value: m, selected: m === wanted }, `${m} (${data.goals[m]})`)));
    renderChoices(columnsOf(data.rows));
    render();
  } catch (error) {
    showError(errorBox, error);
    table.dataset.ready = "1";
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const query = new URLSearchParams({ q: queryInput.value, limit: limitInput.value, best: bestSelect.value });
  history.pushState(null, "", `/table?${query}`);
  load();
});
bestSelect.addEventListener("change", render);
compareButton.addEventListener("click", () => {
  const ids = [...new Set([...selected].map((k) => k.split("#")[0]))];
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
