// The experiments list's "primary metric · recent history" column: each experiment's primary
// metric (median of its first trial) and a small SVG line of that trial over the last experiments
// of its series (the trial as `kubebench history` names it), the last change found in it as a badge
// coloured by the metric's goal, linked to the series' history page. Filled after the table, from
// /api/sparklines.
import { el, fmtSi, getJson } from "./common.js";

// the line's vertical range covers at least ±2% of its middle: run-to-run noise stays flat
const FLOOR = 0.02;

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with these attributes (and text). */
export function svg(tag, attrs, text = undefined) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** An inline SVG polyline of ``values`` (nulls skipped), the last point marked. */
export function sparkline(values, width = 90, height = 22) {
  const known = values.map((v, i) => [i, v]).filter(([, v]) => v !== null && Number.isFinite(v));
  const box = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "sparkline", role: "img" });
  if (known.length < 2) return box;
  const ys = known.map(([, v]) => v);
  const middle = (Math.min(...ys) + Math.max(...ys)) / 2;
  const half = Math.max((Math.max(...ys) - Math.min(...ys)) / 2, Math.abs(middle) * FLOOR) || 1;
  const low = middle - half, span = 2 * half;
  const x = (i) => 2 + (i / Math.max(1, values.length - 1)) * (width - 4);
  const y = (v) => height - 2 - ((v - low) / span) * (height - 4);
  box.append(svg("polyline", { points: known.map(([i, v]) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    fill: "none", stroke: "currentColor", "stroke-width": "1.5" }));
  const [li, lv] = known[known.length - 1];
  box.append(svg("circle", { cx: x(li).toFixed(1), cy: y(lv).toFixed(1), r: "2.2", fill: "currentColor" }));
  return box;
}

// trends already fetched: the list redraws every few seconds, a finished experiment's trend stays
const known = new Map();
const MAX_IDS = 50;

/** Fills the trend cells of ``body`` for these experiment ids (one request for those not known yet). */
export async function fillTrends(body, ids, running = new Set()) {
  const wanted = ids.filter((id) => !known.has(id) || running.has(id));
  // the server answers at most MAX_IDS ids a request (kubebench.web.sparklines)
  for (let start = 0; start < wanted.length; start += MAX_IDS) {
    const piece = wanted.slice(start, start + MAX_IDS);
    try {
      const found = await getJson(`/api/sparklines?ids=${encodeURIComponent(piece.join(","))}`);
      for (const id of piece) known.set(id, found[id] || null);
    } catch {
      return; // the list is whole without its trends
    }
  }
  for (const cell of body.querySelectorAll("td[data-trend]")) {
    const trend = known.get(cell.dataset.trend);
    if (!trend) continue;
    const line = sparkline(trend.history);
    line.setAttribute("aria-label", `${trend.metric} over the last ${trend.history.length} experiments of ${trend.series}`);
    cell.replaceChildren(el("a", { href: `/history/${encodeURIComponent(trend.series)}`, class: "trend-link",
      title: `${trend.metric}: history of ${trend.series}` },
    el("span", { class: "num" }, fmtSi(trend.value, trend.unit || "")), " ", line, changeBadge(trend)));
  }
  body.dataset.trends = "1";
}

/** ``▼ −9.1%``: the last change found in the trend (regressed red, improved green, for the metric's goal). */
function changeBadge(trend) {
  const change = trend.change;
  if (!change || (change.verdict !== "regressed" && change.verdict !== "improved")) return null;
  const up = change.change >= 0;
  const text = `${up ? "▲" : "▼"} ${up ? "+" : "−"}${Math.abs(change.change * 100).toFixed(1)}%`;
  return el("span", { class: `badge trend-change ${change.verdict}`, dataset: { verdict: change.verdict },
    title: `${change.verdict} at ${change.experiment}` }, text);
}
