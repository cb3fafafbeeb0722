// Shared helpers of the dashboard's pages: API calls, the access token, safe DOM building, formatting.
// Every text coming from the API is inserted with textContent (via el()), never as HTML.

const TOKEN_KEY = "kubebench-token";

export class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// The server prints /?token=…: keep the token for later state changes and take it out of the URL
// (so it is not bookmarked or shared by accident).
export function takeTokenFromUrl() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token) {
    localStorage.setItem(TOKEN_KEY, token);
    url.searchParams.delete("token");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
  }
}

async function errorOf(response) {
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  let detail = body && body.detail;
  if (Array.isArray(detail)) detail = detail.map((d) => d.msg || JSON.stringify(d)).join("; ");
  return new ApiError(response.status, detail || `${response.status} ${response.statusText}`, body);
}

/** GET a JSON resource of the API; throws ApiError on an HTTP error. */
export async function getJson(path, options = {}) {
  return jsonOf(await fetch(path, { headers: { Accept: "application/json" }, ...options }));
}

export async function jsonOf(response) {
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

/** The answer to ``path`` that the page's inline script already asked for, once; else null. */
export function takePrefetched(path) {
  const prefetch = window.kubebenchPrefetch;
  if (!prefetch || prefetch.url !== path) return null;
  window.kubebenchPrefetch = null;
  return prefetch.response.then(jsonOf);
}

/** GET a text resource (logs, files). */
export async function getText(path) {
  const response = await fetch(path);
  if (!response.ok) throw await errorOf(response);
  return response.text();
}

/** A state change (POST/DELETE) with the Bearer token; on 401 asks for the token and retries once. */
export async function send(method, path, body = undefined, retried = false) {
  const headers = { Accept: "application/json" };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401 && !retried) {
    const given = await askToken();
    if (given) return send(method, path, body, true);
  }
  if (!response.ok) throw await errorOf(response);
  return response.status === 204 ? null : response.json();
}

/** Shows the token form (input #token-input); resolves with the token, or null when cancelled. */
export function askToken() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  const cancel = document.getElementById("token-cancel");
  form.hidden = false;
  input.value = "";
  input.focus();
  return new Promise((resolve) => {
    const done = (value) => {
      form.hidden = true;
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      resolve(value);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) return;
      localStorage.setItem(TOKEN_KEY, token);
      done(token);
    };
    const onCancel = () => done(null);
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
  });
}

/** Build an element: el("a", {href: "/x", class: "y"}, "text", child…). Strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function badge(state) {
  return el("span", { class: `badge ${String(state || "").replace(/[^a-z_-]/gi, "")}` }, state || "");
}

/** An experiment's state as shown: a failed experiment of which some runs succeeded reads "partial". */
export function shownState(experiment) {
  return experiment.partial ? "partial" : experiment.state;
}

/** The badge of an experiment (ExperimentSummary), with what "partial" means on hover. */
export function stateBadge(experiment) {
  const node = badge(shownState(experiment));
  if (experiment.partial) node.title = partialTitle(experiment.runs_by_status);
  return node;
}

export function setStateBadge(node, experiment) {
  setBadge(node, shownState(experiment));
  node.title = experiment.partial ? partialTitle(experiment.runs_by_status) : "";
}

function partialTitle(counts) {
  const c = counts || {};
  const failed = (c.failed || 0) + (c.timeout || 0);
  return `partly failed: ${c.succeeded || 0} runs succeeded, ${failed} failed (filtered as failed)`;
}

export function setBadge(node, state) {
  node.className = `badge ${String(state || "").replace(/[^a-z_-]/gi, "")}`;
  node.textContent = state || "";
}

export function showFlash(message, isError = false) {
  const flash = document.getElementById("flash");
  flash.textContent = message;
  flash.classList.toggle("error", isError);
  flash.hidden = false;
  clearTimeout(showFlash.timer);
  showFlash.timer = setTimeout(() => { flash.hidden = true; }, isError ? 10000 : 4000);
}

export function showError(node, error) {
  node.textContent = error instanceof Error ? error.message : String(error);
  node.hidden = false;
}

const RUN_STATES = ["succeeded", "failed", "error", "timeout", "cancelled", "running", "pending"];
// Runs that ran to their end; a cancelled run (most never started) is not "done" and is counted apart.
const DONE_STATES = new Set(["succeeded", "failed", "error", "timeout"]);

/** A stacked progress bar of runs by status, with "x/n done · …" under it. */
export function progressBar(runsByStatus, total) {
  const counts = runsByStatus || {};
  const n = total || Object.values(counts).reduce((a, b) => a + b, 0);
  let done = 0;
  const segments = [];
  for (const state of RUN_STATES) {
    const count = counts[state] || 0;
    if (DONE_STATES.has(state)) done += count;
    if (count && n) segments.push(el("span", { class: state, style: `width:${(100 * count) / n}%`, title: `${count} ${state}` }));
  }
  const parts = RUN_STATES.filter((s) => counts[s] && s !== "succeeded").map((s) => `${counts[s]} ${s}`);
  const text = `${done}/${n} done${parts.length ? " · " + parts.join(", ") : ""}`;
  const bar = el("div", { class: "progress", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": n,
    "aria-valuenow": done, "aria-valuetext": text, "aria-label": "Runs" }, segments);
  const label = el("div", { class: "progress-label" }, text);
  return el("div", { class: "progress-wrap", dataset: { done: String(done), total: String(n) } }, bar, label);
}

export function fmtTime(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const d = new Date(seconds * 1000);
  const pad = (x) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// ---- numbers: one formatter, the same rules as kubebench.present.numbers (the CLI and the report) ----
const PREFIXES = new Map([[-12, "p"], [-9, "n"], [-6, "µ"], [-3, "m"], [0, ""], [3, "k"], [6, "M"], [9, "G"], [12, "T"], [15, "P"]]);
const BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
// units that already carry a prefix (ms, MB, GiB …) or are relative (%): no second prefix
const PREFIXED = /^(?:[pnuµmkKMGTP]i?(?:s|B|b|Hz|W|J|bit)\b|%)/;
// base units a prefix joins (µs, GHz); other units are counts per something (8.94 M images/s)
const ATTACHED = /^(?:s|Hz|W|J|bit|b|FLOP\/s|FLOPS|flop\/s)$/;
const NAME_UNITS = [[/(^|_)bytes($|_)/, "bytes"], [/(^|_)percent($|_)/, "%"], [/(?<!_per)(_seconds|_secs|_sec|_s)$/, "s"],
  [/_ms$/, "ms"]];
const finite = (x) => typeof x === "number" && Number.isFinite(x);

/** The declared unit, else one read from the metric's name (``*_bytes``, ``*_percent*``, ``*_seconds``). */
export function metricUnit(name, declared = "") {
  if (declared) return declared;
  const found = NAME_UNITS.find(([pattern]) => pattern.test(String(name || "")));
  return found ? found[1] : "";
}

function plain(value, digits) {
  if (value === 0) return "0";
  const decimals = Math.min(20, Math.max(0, digits - 1 - Math.floor(Math.log10(Math.abs(value)))));
  // an exact tie rounds to even, as Python's format does (1234.5 → 1234): the CLI and the page agree
  const scaled = value * 10 ** decimals;
  if (Math.abs(scaled % 1) === 0.5) {
    const even = 2 * Math.round(scaled / 2);
    return (even / 10 ** decimals).toFixed(decimals);
  }
  return value.toFixed(decimals);
}

function binary(value, digits) {
  let size = Math.abs(value), index = 0;
  while (size >= 1024 && index < BINARY.length - 1) { size /= 1024; index += 1; }
  const sign = value < 0 ? "-" : "";
  if (!index) return `${sign}${plain(size, digits)} B`;
  return `${sign}${plain(Number(size.toPrecision(digits)), digits)} ${BINARY[index]}`;
}

/** ``value`` with 3 significant digits, an SI prefix and ``unit`` (``8.94 M images/s``, ``182 µs``,
 * ``329 MiB``), never scientific notation; "–" when missing. */
export function fmtSi(value, unit = "", digits = 3) {
  if (!finite(value)) return value === null || value === undefined || typeof value === "number" ? "–" : String(value);
  if (unit === "bytes" || unit === "B") return binary(value, digits);
  const suffix = unit ? ` ${unit}` : "";
  if (value === 0) return `0${suffix}`;
  if (PREFIXED.test(unit) || (!unit && Math.abs(value) >= 1e-3 && Math.abs(value) < 1)) return plain(value, digits) + suffix;
  let exponent = 3 * Math.floor(Math.log10(Math.abs(value)) / 3);
  let mantissa = Number((value / 10 ** exponent).toPrecision(digits));
  if (Math.abs(mantissa) >= 1000) { exponent += 3; mantissa /= 1000; }
  if (!PREFIXES.has(exponent)) return `${value.toExponential(digits - 1)}${suffix}`;
  const prefix = PREFIXES.get(exponent);
  if (ATTACHED.test(unit)) return `${plain(mantissa, digits)} ${prefix}${unit}`;
  return [plain(mantissa, digits), prefix, unit].filter(Boolean).join(" ");
}

/** :func:`fmtSi` for a column whose header names the unit: the prefix only (``8.94 M``), except for the
 * units a prefix joins and bytes (``182 µs``, ``322 MiB``). */
export function fmtShort(value, unit = "") {
  return fmtSi(value, unit === "bytes" || unit === "B" || ATTACHED.test(unit) ? unit : "");
}

/** The unit a column header names for :func:`fmtShort` cells ("" for those whose cells carry it). */
export function headerUnit(unit) {
  return unit && !(unit === "bytes" || unit === "B" || ATTACHED.test(unit)) ? unit : "";
}

/** A count (``12``), or any other number as :func:`fmtSi` writes it without a unit; "–" when missing. */
export function fmtNum(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e4) return String(x);
  return fmtSi(x);
}

/** ``0.123`` as ``12.3%``; "–" when missing. */
export function fmtPercent(x, digits = 1) {
  return finite(x) ? `${(x * 100).toFixed(digits)}%` : "–";
}

/** A p-value or ratio with ``digits`` significant digits, never an exponent (``0.00041``). */
export function fmtPlain(x, digits = 2) {
  return finite(x) ? plain(Number(x.toPrecision(digits)), digits) : "–";
}

/** How a chart axis shows values of ``unit`` (kubebench.present.numbers.axis_scale): multiplied by
 * ``factor``, titled with ``unit`` (``ms`` for seconds below one, ``MiB`` for bytes), SI ticks for counts. */
export function axisScale(values, unit = "") {
  const top = Math.max(0, ...values.filter(finite).map(Math.abs));
  if (unit === "bytes" || unit === "B") {
    let index = 0, size = top;
    while (size >= 1024 && index < BINARY.length - 1) { size /= 1024; index += 1; }
    return { factor: 1024 ** -index, unit: BINARY[index], tickformat: "" };
  }
  if (PREFIXED.test(unit) || !top) return { factor: 1, unit, tickformat: "" };
  if (ATTACHED.test(unit)) {
    const exponent = Math.max(-12, Math.min(unit === "s" ? 0 : 15, 3 * Math.floor(Math.log10(top) / 3)));
    return { factor: 10 ** -exponent, unit: PREFIXES.get(exponent) + unit, tickformat: "" };
  }
  return { factor: 1, unit, tickformat: top >= 1000 ? "~s" : "" };
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "";
  return fmtSi(n, "bytes");
}

export function fmtParams(params) {
  const entries = Object.entries(params || {});
  return entries.length ? entries.map(([k, v]) => `${k}=${fmtValue(v)}`).join(", ") : "–";
}

export function fmtValue(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Text for Plotly labels: Plotly reads a few HTML-like tags in strings, so show < and > literally. */
export function plotText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

let plotlyPromise = null;

/** Loads Plotly (served by the app, about 4.6 MB) once, after the page's tables are shown. */
export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = new Promise((resolve, reject) => {
      const script = el("script", { src: document.body.dataset.plotly });
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("could not load the plotting library (/static/plotly.min.js)"));
      document.head.append(script);
    });
  }
  return plotlyPromise;
}

// Four buttons (download, zoom, pan, reset): fewer stops for the keyboard and room for the title.
// Plotly 4's "Share chart…" would upload the data to Plotly Cloud: never from this dashboard.
export const PLOT_CONFIG = { displaylogo: false, responsive: true,
  modeBarButtonsToRemove: ["lasso2d", "select2d", "zoomIn2d", "zoomOut2d", "autoScale2d", "sendChartToCloud"] };

const DARK = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

/** The page's colours (CSS variables of style.css), so that charts follow the light or dark theme. */
export function themeColours() {
  const css = getComputedStyle(document.documentElement);
  const value = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return { bg: value("--card", "#fff"), fg: value("--fg", "#1f2933"), muted: value("--muted", "#616e7c"),
    line: value("--line", "#d9e2ec"), dark: Boolean(DARK && DARK.matches) };
}

/** The layout keys that carry the theme (also applied to drawn charts when the system theme changes). */
export function themeLayout() {
  const c = themeColours();
  const axis = { gridcolor: c.line, linecolor: c.line, zerolinecolor: c.muted, color: c.fg };
  return { paper_bgcolor: c.bg, plot_bgcolor: c.bg, font: { color: c.fg }, xaxis: axis, yaxis: axis,
    modebar: { bgcolor: "rgba(0,0,0,0)", color: c.muted, activecolor: c.fg } };
}

/** Calls ``redraw`` whenever the system switches between light and dark. */
export function onThemeChange(redraw) {
  if (DARK && DARK.addEventListener) DARK.addEventListener("change", redraw);
}

/** A horizontal legend under the chart, in the figure's bottom margin (which Plotly grows to hold it). */
export const LEGEND_BELOW = { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom" };

/** A chart's layout: a short title (and a ``subtitle`` under it for what the marks mean), axes that
 * make room for their titles, and the legend below the plot area, under the x axis' title, so that it
 * never covers the plot nor squeezes it (review 2026-12-02 #3, #12). */
export function plotLayout(title, { subtitle = "", ...extra } = {}) {
  const theme = themeLayout();
  return {
    // left-aligned: the mode bar sits top right and would cover a centred title on a phone
    title: { text: plotText(title), font: { size: 14 }, x: 0.02, xanchor: "left",
      ...(subtitle ? { subtitle: { text: plotText(subtitle), font: { size: 11, color: themeColours().muted } } } : {}) },
    margin: { l: 60, r: 20, t: subtitle ? 70 : 56, b: 56 },
    height: 360,
    paper_bgcolor: theme.paper_bgcolor,
    plot_bgcolor: theme.plot_bgcolor,
    font: theme.font,
    modebar: theme.modebar,
    legend: LEGEND_BELOW,
    ...extra,
    xaxis: { automargin: true, ...theme.xaxis, ...(extra.xaxis || {}) },
    yaxis: { automargin: true, ...theme.yaxis, ...(extra.yaxis || {}) },
  };
}

/** A table header row whose columns sort the body's rows (numbers by value): each label is a
 * button, so a keyboard sorts too (Tab to it, Enter or Space); ``aria-sort`` tells the order. */
export function sortableHead(table, columns) {
  const row = el("tr");
  columns.forEach((column, index) => {
    const th = el("th", { class: `sortable${column.num ? " num" : ""}`, "aria-sort": "none", scope: "col",
      title: column.title || null });
    const button = el("button", { type: "button", class: "sort" }, column.label);
    button.addEventListener("click", () => sortBy(table, index, th));
    th.append(button);
    row.append(th);
  });
  return el("thead", {}, row);
}

function sortBy(table, index, th) {
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  for (const other of th.parentNode.children) other.setAttribute("aria-sort", "none");
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = [...body.rows];
  const key = (tr) => {
    const cell = tr.cells[index];
    const raw = cell ? (cell.dataset.sort ?? cell.textContent) : "";
    const number = Number(raw);
    return raw !== "" && !Number.isNaN(number) ? number : raw;
  };
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return ascending ? order : -order;
  });
  body.append(...rows);
}

/** The server's settings the page was rendered with (read-only mode is shown in the top bar). */
export function pageConfig() {
  return { read_only: document.body.dataset.readOnly === "1" };
}

takeTokenFromUrl();
