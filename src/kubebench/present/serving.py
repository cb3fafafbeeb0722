"""Serving plots and the capacity table of an experiment (pure: records in, figures and HTML out).

- latency percentiles against the load, one line per server setting, with the SLO's bounds drawn;
- goodput (and throughput) against the load;
- the throughput–interactivity frontier: system output tokens/s against output tokens/s one user
  sees, one curve per server setting through its loads, as MLPerf's endpoint rules and vLLM's
  pareto plot draw it (up and to the right is better; the frontier is what no setting beats);
- for a capacity search, each setting's answer: the bracket, the estimate and its interval.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import yaml

from ..numerics.stats import summarize
from ..store.records import ExperimentRecord, RunRecord

LOAD_PARAMETERS = ("rate", "request_rate", "qps", "concurrency", "max_concurrency", "users")
LATENCIES = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p99", "e2e_p99")


def is_serving(runs: Sequence[RunRecord]) -> bool:
    """The runs carry the load generator's metrics."""
    return any("ttft_p50" in r.metrics or "output_tokens_per_s" in r.metrics for r in runs)


def spec_of(record: ExperimentRecord) -> dict:
    """The stored spec as a mapping (empty when it does not parse)."""
    try:
        data = yaml.safe_load(record.spec_text) or {}
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def load_parameter(spec: dict, runs: Sequence[RunRecord]) -> str | None:
    """The parameter that sets the load: the searched one, else a swept one named like a load."""
    search = spec.get("search") or {}
    if isinstance(search, dict) and search.get("parameter"):
        return str(search["parameter"])
    names = {k for r in runs for k in r.params}
    return next((name for name in LOAD_PARAMETERS if name in names), None)


def slo_bounds(spec: dict) -> dict[str, float]:
    """The search's bounds (``{ttft_p99: 2.0}``), in seconds."""
    from ..serving.slo import seconds

    search = spec.get("search") or {}
    slo = search.get("slo") if isinstance(search, dict) else None
    out = {}
    for name, value in (slo or {}).items():
        try:
            out[str(name)] = seconds(value)
        except ValueError:
            continue
    return out


def _setting(params: dict, load: str | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != load) or "all"


def _curves(runs: Sequence[RunRecord], load: str | None, metrics: Sequence[str]) -> dict[str, list[tuple]]:
    """Per server setting: (load value, {metric: median over the trial's succeeded runs}) sorted by load."""
    trials: dict[tuple[str, object], dict[str, list[float]]] = {}
    for r in runs:
        if r.warmup or r.status != "succeeded":
            continue
        key = (_setting(r.params, load), r.params.get(load) if load else r.trial_id)
        values = trials.setdefault(key, {})
        for m in metrics:
            if m in r.metrics:
                values.setdefault(m, []).append(r.metrics[m])
    curves: dict[str, list[tuple]] = {}
    for (setting, x), values in trials.items():
        curves.setdefault(setting, []).append((x, {m: summarize(v).median for m, v in values.items()}))
    for points in curves.values():
        points.sort(key=lambda p: (isinstance(p[0], str), p[0]))
    return curves


def latency_vs_load(runs: Sequence[RunRecord], load: str, bounds: dict[str, float]) -> Any:
    """Latency percentiles (median of the runs) against the load, with the SLO bounds dashed."""
    import plotly.graph_objects as go

    present = [m for m in LATENCIES if any(m in r.metrics for r in runs)]
    figure = go.Figure()
    for setting, points in _curves(runs, load, present).items():
        for metric in present:
            xs = [x for x, v in points if metric in v]
            figure.add_trace(go.Scatter(x=xs, y=[v[metric] for _, v in points if metric in v], mode="lines+markers",
                                        name=f"{metric} · {setting}"))
    for metric, bound in bounds.items():
        figure.add_hline(y=bound, line_dash="dash", line_color="red", annotation_text=f"SLO {metric} ≤ {bound:g} s")
    figure.update_layout(title=f"latency vs {load}", xaxis_title=load, yaxis_title="seconds (median of runs)",
                         yaxis_type="log")
    return figure


def goodput_vs_load(runs: Sequence[RunRecord], load: str) -> Any:
    """Goodput and request throughput against the load."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for setting, points in _curves(runs, load, ("goodput", "request_throughput")).items():
        for metric, dash in (("goodput", "solid"), ("request_throughput", "dot")):
            xs = [x for x, v in points if metric in v]
            if xs:
                figure.add_trace(go.Scatter(x=xs, y=[v[metric] for _, v in points if metric in v],
                                            mode="lines+markers", line={"dash": dash}, name=f"{metric} · {setting}"))
    figure.update_layout(title=f"goodput vs {load}", xaxis_title=load, yaxis_title="requests/s (median of runs)")
    return figure


def frontier(runs: Sequence[RunRecord], load: str | None) -> Any:
    """System output tokens/s against tokens/s per user, one curve per server setting, and the
    frontier over all of them."""
    import plotly.graph_objects as go

    metrics = ("output_tokens_per_s", "output_tokens_per_s_per_user")
    figure = go.Figure()
    everything = []
    for setting, points in _curves(runs, load, metrics).items():
        pts = [(v[metrics[1]], v[metrics[0]], x) for x, v in points if all(m in v for m in metrics)]
        everything += pts
        figure.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                    text=[f"{load}={p[2]}" for p in pts] if load else None, name=setting))
    best = pareto(everything)
    if best:
        figure.add_trace(go.Scatter(x=[p[0] for p in best], y=[p[1] for p in best], mode="lines",
                                    line={"dash": "dash", "color": "grey"}, name="frontier"))
    figure.update_layout(title="throughput vs interactivity", xaxis_title="output tokens/s per user",
                         yaxis_title="system output tokens/s")
    return figure


def pareto(points: Sequence[tuple]) -> list[tuple]:
    """The points no other point beats on both axes (more per user and more in total), by x."""
    ordered = sorted(points, key=lambda p: (-p[0], -p[1]))
    front, best = [], float("-inf")
    for p in ordered:
        if p[1] > best:
            front.append(p)
            best = p[1]
    return sorted(front, key=lambda p: p[0])


def capacity_rows(spec: dict, runs: Sequence[RunRecord]) -> tuple[str, list[dict]]:
    """The search's question (``highest rate with ttft_p99 ≤ 1``) and its answer per server setting;
    empty without a search."""
    if not isinstance(spec.get("search"), dict):
        return "", []
    from ..serving.driver import answers, points_of
    from ..spec.model import CapacitySearch

    try:
        search = CapacitySearch.model_validate(spec["search"])
    except ValueError:
        return "", []
    question = f"highest {search.parameter} with " + ", ".join(f"{k} ≤ {v:g}" for k, v in search.slo.items())
    rows = [{"setting": _setting(a.point, None), "status": a.status, "meets": a.meets, "fails": a.fails,
             "estimate": a.estimate, "ci": list(a.ci) if a.ci else None, "probes": a.probes, "runs": a.runs}
            for a in answers(search, points_of(search, runs), runs)]
    return question, rows


def capacity_html(spec: dict, runs: Sequence[RunRecord]) -> str:
    """The capacity search's answer per server setting, as an HTML table (empty without a search)."""
    question, rows = capacity_rows(spec, runs)
    if not question:
        return ""
    parameter = spec["search"]["parameter"]
    head = ["setting", "status", f"meets at {parameter}", "fails at", "estimate", "95% interval", "probes", "runs"]
    cells = [[r["setting"], r["status"], _num(r["meets"]), _num(r["fails"]), _num(r["estimate"]),
              f"{r['ci'][0]:.4g} … {r['ci'][1]:.4g}" if r["ci"] else "–", str(r["probes"]), str(r["runs"])]
             for r in rows]
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    return (f"<h3>capacity: {html.escape(question)}</h3><table><thead><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>")


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def serving_parts(record: ExperimentRecord, runs: Sequence[RunRecord]) -> tuple[list[str], list[Any]]:
    """Tables and figures of a serving experiment (nothing for other experiments)."""
    if not is_serving(runs):
        return [], []
    spec = spec_of(record)
    load = load_parameter(spec, runs)
    tables = [t for t in (capacity_html(spec, runs),) if t]
    figures = [frontier(runs, load)]
    if load:
        figures = [latency_vs_load(runs, load, slo_bounds(spec)), goodput_vs_load(runs, load), *figures]
    return tables, figures


def serving_view(record: ExperimentRecord, runs: Sequence[RunRecord]) -> dict:
    """The dashboard's serving part: the capacity answer and the figures as Plotly JSON (empty lists
    for an experiment that is not a serving one)."""
    import json

    if not is_serving(runs):
        return {"question": "", "capacity": [], "figures": []}
    question, rows = capacity_rows(spec_of(record), runs)
    _, figures = serving_parts(record, runs)
    return {"question": question, "capacity": rows, "figures": [json.loads(f.to_json()) for f in figures]}
