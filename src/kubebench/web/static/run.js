// One run: state and timings, metrics, provenance, the log of each replica, telemetry charts and a
// browser of the run's folder (config/, output/, result/) with inline view and download.
import {
  clear, el, fmtBytes, fmtDuration, fmtParams, fmtSi, fmtTime, getJson, getText, metricUnit, setBadge, showError,
} from "./common.js";
import { draw, plotBox, stepTimesChart, telemetryChart } from "./plots.js";

const root = document.getElementById("run");
const id = root.dataset.runId;
const base = `/api/runs/${encodeURIComponent(id)}`;
const errorBox = document.getElementById("run-error");
const logSelect = document.getElementById("log-select");
const logView = document.getElementById("log-view");
const VIEW_LIMIT = 2 * 1024 * 1024; // larger files are offered for download only
const LIVE = new Set(["running", "pending"]);
let run = null;
let telemetryDrawn = false;

function kvRows(tbody, rows) {
  clear(tbody).append(...rows.map(([key, value]) => el("tr", {}, el("th", {}, key),
    el("td", {}, value instanceof Node ? value : value === null || value === undefined || value === "" ? "–" : String(value)))));
}

// Nested provenance ({python: {version: …}}) as flat "python.version" rows.
function flatten(object, prefix = "", out = []) {
  for (const [key, value] of Object.entries(object || {})) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (value && typeof value === "object" && !Array.isArray(value)) flatten(value, name, out);
    else out.push([name, typeof value === "string" ? value : JSON.stringify(value)]);
  }
  return out;
}

async function load() {
  try {
    run = await getJson(base);
  } catch (error) {
    showError(errorBox, error);
    return;
  }
  setBadge(document.getElementById("run-state"), run.status);
  root.dataset.status = run.status;
  document.getElementById("run-params").textContent = `trial ${run.trial_id} · ${fmtParams(run.params)}`;
  kvRows(document.querySelector("#run-summary tbody"), [
    ["status", run.status], ["exit code", run.exit_code], ["reason", run.reason], ["attempts", run.attempts],
    ["repeat", run.warmup ? `${run.repeat} (warm-up)` : run.repeat], ["started", fmtTime(run.started_at)],
    ["finished", fmtTime(run.finished_at)], ["duration", fmtDuration(run.duration_s)], ["folder", run.path],
  ]);
  renderInfo();
  // declared metrics first with their units, then the workload's others, then telemetry (review 2026-12-02 #14)
  const metrics = run.metric_list || [];
  kvRows(document.querySelector("#run-metrics tbody"),
    metrics.length ? metrics.map((m) => [m.name, fmtSi(m.value, m.unit)]) : [["–", "no metrics recorded"]]);
  for (const [i, m] of metrics.entries()) {
    const row = document.querySelectorAll("#run-metrics tbody tr")[i];
    row.dataset.metric = m.name;
    if (m.declared) row.classList.add("declared");
    if (m.telemetry) row.classList.add("telemetry");
  }
  const provenance = flatten(run.provenance);
  kvRows(document.querySelector("#provenance tbody"), provenance.length ? provenance : [["–", "no provenance recorded"]]);
  fillLogs();
  await showLog();
  root.dataset.ready = "1";
  drawSteps();
  drawTelemetry();
  if (LIVE.has(run.status)) setTimeout(load, 3000);
}

// What the run found out about itself (the drift of its step time, why it has no energy): warnings
// are highlighted, and a run without any says so.
const WARNING_INFO = /^(drifting|.*_unavailable|.*_warning|invalid.*)$/;

function renderInfo() {
  const body = document.querySelector("#run-info tbody");
  const entries = Object.entries(run.info || {});
  kvRows(body, entries.length ? entries : [["–", "nothing to note"]]);
  entries.forEach(([key], i) => {
    const row = body.rows[i];
    row.dataset.info = key;
    if (WARNING_INFO.test(key)) row.classList.add("warning-row");
  });
}

// ---- step times ------------------------------------------------------------------------------------
let stepsDrawn = false;

async function drawSteps() {
  if (!run.step_times || stepsDrawn || LIVE.has(run.status)) return;
  try {
    const data = JSON.parse(await getText(`${fileUrl("output/step_times.json")}?inline=1`));
    const steps = (data.step_seconds || []).map(Number);
    if (!steps.length) return;
    document.getElementById("steps-section").hidden = false;
    await draw(document.getElementById("step-plot"), stepTimesChart(steps, (run.metrics || {}).warmup_steps_detected,
      (run.metrics || {}).steady_step_time));
    stepsDrawn = true;
  } catch (error) {
    showError(errorBox, error);
  }
}

// ---- logs ----------------------------------------------------------------------------------------
function fillLogs() {
  const names = run.logs || [];
  const chosen = logSelect.value || new URLSearchParams(window.location.search).get("log") || names[0];
  if (logSelect.options.length !== names.length) {
    logSelect.replaceChildren(...names.map((n) => el("option", { value: n, selected: n === chosen }, n)));
  }
  logSelect.disabled = !names.length;
}

async function showLog() {
  const replica = logSelect.value;
  logView.dataset.replica = replica || "";
  if (!replica) {
    logView.textContent = run.log_tail ? run.log_tail : "No log was collected for this run.";
    return;
  }
  try {
    // the end of the log only: a log of many MiB would stall the page (the file browser has all of it)
    const text = await getText(`${base}/logs/${encodeURIComponent(replica)}?tail=${VIEW_LIMIT}`);
    logView.textContent = text || "(empty log)";
    logView.scrollTop = logView.scrollHeight;
  } catch (error) {
    logView.textContent = `Could not read the log: ${error.message}`;
  }
}

logSelect.addEventListener("change", () => {
  setQuery({ log: logSelect.value });
  showLog();
});

// long lines (a KUBEBENCH_METRIC line, a traceback) are cut at the box's edge unless wrapped
const wrap = document.getElementById("log-wrap");
wrap.checked = localStorage.getItem("kubebench.log.wrap") === "1";
logView.classList.toggle("wrap", wrap.checked);
wrap.addEventListener("change", () => {
  logView.classList.toggle("wrap", wrap.checked);
  localStorage.setItem("kubebench.log.wrap", wrap.checked ? "1" : "0");
});

// ---- telemetry -----------------------------------------------------------------------------------
async function drawTelemetry() {
  const note = document.getElementById("telemetry-note");
  const box = document.getElementById("telemetry");
  if (!(run.telemetry || []).length) {
    note.textContent = "No telemetry was recorded for this run.";
    note.hidden = false;
    return;
  }
  if (telemetryDrawn && !LIVE.has(run.status)) return;
  try {
    const { series } = await getJson(`${base}/telemetry`);
    // a series of one sample is a value, not a chart (six charts of axes −1…1 said nothing)
    const single = Object.entries(series).filter(([, points]) => points.length < 2);
    const singleNote = document.getElementById("telemetry-single") || el("p", { id: "telemetry-single", class: "muted" });
    singleNote.textContent = single.length ? `One sample each: ${single.map(([name, points]) =>
      `${name} ${fmtSi(points[0][1], metricUnit(name))}`).join(", ")}.` : "";
    singleNote.hidden = !single.length;
    if (!singleNote.isConnected) box.before(singleNote);
    const charted = Object.entries(series).filter(([, points]) => points.length >= 2);
    // every box first, so that each chart is drawn at its final width in the grid
    const boxes = charted.map(([name]) => plotBox(box, `telemetry-${name.replace(/[^a-zA-Z0-9_-]/g, "_")}`));
    for (const [i, [name, points]] of charted.entries()) await draw(boxes[i], telemetryChart(name, points, metricUnit(name)));
    telemetryDrawn = true;
    box.dataset.rendered = "1";
  } catch (error) {
    showError(errorBox, error);
  }
}

// ---- files ---------------------------------------------------------------------------------------
const fileUrl = (path) => `${base}/files/${path.split("/").map(encodeURIComponent).join("/")}`;

function setQuery(values) {
  const url = new URL(window.location.href);
  for (const [key, value] of Object.entries(values)) {
    if (value) url.searchParams.set(key, value); else url.searchParams.delete(key);
  }
  history.replaceState(null, "", url);
}

function crumbs(path) {
  const box = clear(document.getElementById("file-crumbs"));
  const parts = path ? path.split("/") : [];
  box.append(el("a", { href: "#", onclick: (e) => { e.preventDefault(); browse(""); } }, "run folder"));
  parts.forEach((part, i) => {
    const target = parts.slice(0, i + 1).join("/");
    box.append(" / ", i === parts.length - 1 ? el("span", {}, part)
      : el("a", { href: "#", onclick: (e) => { e.preventDefault(); browse(target); } }, part));
  });
}

async function browse(path) {
  const tbody = document.querySelector("#files-table tbody");
  setQuery({ dir: path });
  crumbs(path);
  try {
    const listing = await getJson(`${base}/files?${new URLSearchParams({ path })}`);
    const rows = listing.entries.map((entry) => {
      const open = (event) => { event.preventDefault(); entry.is_dir ? browse(entry.path) : view(entry); };
      return el("tr", { dataset: { path: entry.path, dir: entry.is_dir ? "1" : "0" } },
        el("td", {}, el("a", { href: entry.is_dir ? "#" : `${fileUrl(entry.path)}?inline=1`, class: entry.is_dir ? "dir-link" : "file-link", onclick: open },
          entry.is_dir ? `${entry.name}/` : entry.name)),
        el("td", { class: "num" }, entry.is_dir ? "" : fmtBytes(entry.size)),
        el("td", {}, entry.is_dir ? "" : el("a", { href: fileUrl(entry.path), download: entry.name, class: "download-link" }, "download")));
    });
    if (path) {
      const up = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
      rows.unshift(el("tr", {}, el("td", { colspan: 3 }, el("a", { href: "#", onclick: (e) => { e.preventDefault(); browse(up); } }, "../"))));
    }
    if (!listing.entries.length) rows.push(el("tr", { class: "placeholder" }, el("td", { colspan: 3 }, "Empty folder.")));
    clear(tbody).append(...rows);
  } catch (error) {
    clear(tbody).append(el("tr", { class: "placeholder" }, el("td", { colspan: 3 }, `Could not list the files: ${error.message}`)));
  }
}

async function view(entry) {
  const panel = document.getElementById("file-panel");
  const pre = document.getElementById("file-view");
  document.getElementById("file-name").textContent = entry.path;
  const download = document.getElementById("file-download");
  download.href = fileUrl(entry.path);
  download.setAttribute("download", entry.name);
  panel.hidden = false;
  pre.dataset.path = entry.path;
  setQuery({ file: entry.path });
  if (entry.size > VIEW_LIMIT) {
    pre.textContent = `${fmtBytes(entry.size)}: too large to show here; download it.`;
    return;
  }
  try {
    const text = await getText(`${fileUrl(entry.path)}?inline=1`);
    pre.textContent = text.includes("\u0000") ? "A binary file: download it." : text || "(empty file)";
  } catch (error) {
    pre.textContent = `Could not read the file: ${error.message}`;
  }
}

const query = new URLSearchParams(window.location.search);
load();
browse(query.get("dir") || "");
if (query.get("file")) {
  const path = query.get("file");
  view({ path, name: path.split("/").pop(), size: 0 });
}
