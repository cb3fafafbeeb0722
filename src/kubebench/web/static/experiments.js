// The experiments list: filters in the query string, counts by state, pagination, live progress, cancel.
import { fillTrends } from "./sparklines.js";
import {
  badge, clear, el, fmtTime, getJson, pageConfig, progressBar, send, showError, showFlash, stateBadge, takePrefetched,
} from "./common.js";

const FILTERS = ["q", "name", "state", "backend", "since", "until"];
const STATES = ["running", "pending", "interrupted", "succeeded", "failed", "cancelled"];
const PAGE = 50;
const POLL_MS = 2000; // while an experiment on the page runs
const IDLE_POLL_MS = 15000; // otherwise: experiments started elsewhere (the CLI) show up too

const form = document.getElementById("filters");
const table = document.getElementById("experiments-table");
const body = table.tBodies[0];
const errorBox = document.getElementById("list-error");
let pollTimer = null;
let generation = 0; // answers to superseded requests are dropped

function query() {
  const params = new URLSearchParams(window.location.search);
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  const limit = Math.min(500, Math.max(1, parseInt(params.get("limit") || String(PAGE), 10) || PAGE));
  const filters = {};
  for (const key of FILTERS) if (params.get(key)) filters[key] = params.get(key);
  return { filters, offset, limit };
}

function fillForm({ filters }) {
  for (const key of FILTERS) form.elements[key].value = filters[key] || "";
}

function navigate(filters, offset, limit = PAGE) {
  const params = new URLSearchParams();
  for (const key of FILTERS) if (filters[key]) params.set(key, filters[key]);
  if (offset) params.set("offset", String(offset));
  if (limit !== PAGE) params.set("limit", String(limit));
  const search = params.toString();
  history.pushState(null, "", search ? `/?${search}` : "/");
  load();
}

async function load() {
  clearTimeout(pollTimer);
  const mine = ++generation;
  const state = query();
  fillForm(state);
  const params = new URLSearchParams({ ...state.filters, offset: state.offset, limit: state.limit });
  try {
    const path = `/api/experiments?${params}`;
    const page = await (takePrefetched(path) || getJson(path));
    if (mine !== generation) return;
    errorBox.hidden = true;
    render(page, state);
    const running = page.items.some((item) => item.state === "running");
    pollTimer = setTimeout(poll, running ? POLL_MS : IDLE_POLL_MS);
  } catch (error) {
    if (mine !== generation) return;
    showError(errorBox, error);
    table.dataset.ready = "error";
  }
}

// A hidden tab does not poll; it refreshes when shown again.
function poll() {
  if (document.visibilityState === "hidden") return;
  load();
}
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") load();
});

function render(page, state) {
  renderCounts(page.counts || {}, page.total, state.filters.state);
  clear(body);
  if (!page.items.length) {
    const text = Object.keys(state.filters).length ? "No experiment matches these filters." : "No experiments yet: launch one.";
    body.append(el("tr", { class: "placeholder" }, el("td", { colspan: 8 }, text)));
  }
  for (const item of page.items) body.append(row(item));
  fillTrends(body, page.items.map((item) => item.id),  // after the table: it never delays it
    new Set(page.items.filter((item) => item.state === "running" || item.state === "pending").map((item) => item.id)));
  renderPager(page, state);
  table.dataset.ready = "1";
  // bench/web_page.py reads this mark: navigation start → table populated
  if (!performance.getEntriesByName("experiments-ready").length) performance.mark("experiments-ready");
  table.dataset.total = String(page.total);
}

function row(item) {
  const link = el("a", { href: `/experiments/${encodeURIComponent(item.id)}`, class: "exp-link" }, item.id);
  // only what this server launched can be cancelled here; a `kubebench run` is stopped where it runs
  const cancel = item.state === "running" && item.launched_here && !pageConfig().read_only
    ? el("button", { type: "button", class: "danger small", dataset: { cancel: item.id }, onclick: () => cancelExperiment(item.id),
      "aria-label": `Cancel ${item.id}` }, "Cancel")
    : null;
  // the name only where the id does not start with it (it is the id's prefix, review 2026-12-02 #26);
  // data-label: what a cell is when a narrow screen shows each row as a card
  const name = item.id.startsWith(item.name) ? null : el("div", { class: "muted exp-name" }, item.name);
  return el("tr", { dataset: { id: item.id, state: item.state, partial: item.partial ? "1" : "0" } },
    el("td", { class: "exp-cell" }, link, name),
    el("td", { class: "state-cell", dataset: { label: "state" } }, stateBadge(item)),
    el("td", { class: "backend-cell", dataset: { label: "backend" } }, item.backend),
    el("td", { class: "runs-cell", dataset: { label: "runs" } }, progressBar(item.runs_by_status, item.runs)),
    el("td", { class: "trend", dataset: { trend: item.id, label: "primary metric" } }),
    el("td", { class: "when", "data-sort": item.created_at, dataset: { label: "created" }, title: fmtTime(item.created_at) },
      fmtWhen(item.created_at)),
    el("td", { class: "when", "data-sort": item.updated_at, dataset: { label: "updated" }, title: fmtTime(item.updated_at) },
      fmtWhen(item.updated_at)),
    el("td", { class: "actions-cell" }, cancel));
}

/** ``12-02 01:28`` this year, ``2025-12-02`` before: one short line (the full time on hover). */
function fmtWhen(seconds) {
  const d = new Date(seconds * 1000);
  const pad = (x) => String(x).padStart(2, "0");
  if (d.getFullYear() !== new Date().getFullYear()) return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function renderCounts(counts, total, active) {
  const box = clear(document.getElementById("counts"));
  const all = Object.values(counts).reduce((a, b) => a + b, 0) || total;
  const chip = (state, label, n) => el("a", {
    class: `count-chip${(active || "") === state ? " active" : ""}`, href: "#", dataset: { state },
    onclick: (event) => { event.preventDefault(); navigate({ ...query().filters, state }, 0); },
  }, label === "all" ? label : badge(label), el("strong", {}, String(n)));
  box.append(chip("", "all", all));
  for (const state of STATES) box.append(chip(state, state, counts[state] || 0));
}

function renderPager(page, state) {
  const first = page.total ? page.offset + 1 : 0;
  const last = Math.min(page.offset + page.items.length, page.total);
  document.getElementById("page-range").textContent = `${first}–${last} of ${page.total}`;
  const prev = document.getElementById("prev-page");
  const next = document.getElementById("next-page");
  prev.disabled = page.offset <= 0;
  next.disabled = page.offset + page.items.length >= page.total;
  prev.onclick = () => navigate(state.filters, Math.max(0, page.offset - state.limit), state.limit);
  next.onclick = () => navigate(state.filters, page.offset + state.limit, state.limit);
}

async function cancelExperiment(id) {
  if (!window.confirm(`Cancel experiment ${id}? Its running runs are stopped.`)) return;
  try {
    await send("POST", `/api/experiments/${encodeURIComponent(id)}/cancel`);
    showFlash(`Cancelling ${id}…`);
    load();
  } catch (error) {
    showFlash(`Could not cancel ${id}: ${error.message}`, true);
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const filters = {};
  for (const key of FILTERS) {
    const value = form.elements[key].value.trim();
    if (value) filters[key] = value;
  }
  navigate(filters, 0);
});
document.getElementById("clear-filters").addEventListener("click", (event) => {
  event.preventDefault();
  navigate({}, 0);
});
window.addEventListener("popstate", load);
load();
