"""Serving plots and the capacity table of an experiment (pure: records in, figures and HTML out).

Legends name only what varies (the metric, and the server setting when there are several); the
parameters every run shares are the chart's subtitle. Legends sit below the plot area, and latency
axes are in the unit their values need (ms, µs).

- latency percentiles against the load, one line per server setting, with the SLO's bounds drawn
  (the capacity search's ``slo:``, and the per-request SLO given to the ``llm-requests`` post-processor);
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
from .numbers import axis_scale, si

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
    """The bounds of the latencies, in seconds: the search's (``{ttft_p99: 2.0}``), and the per-request
    SLO of an ``llm-requests`` post-processor (``ttft=1s,tpot=100ms``: ``{ttft: 1.0, tpot: 0.1}``), which
    bounds every percentile of that latency."""
    from ..durations import parse_duration
    from ..serving.slo import parse_request_slo

    search = spec.get("search") or {}
    slo = search.get("slo") if isinstance(search, dict) else None
    out = {}
    for name, value in (slo or {}).items():
        try:
            out[str(name)] = parse_duration(value, "a latency bound")
        except ValueError:
            continue
    for step in spec.get("postprocess") or []:
        if isinstance(step, dict) and step.get("kind") == "llm-requests" and step.get("slo"):
            try:
                out.update({name: bound for name, bound in parse_request_slo(str(step["slo"])).items()
                            if not any(k.startswith(f"{name}_") for k in out)})
            except ValueError:
                continue
    return out


def _setting(params: dict, load: str | None, varying: Sequence[str] | None = None) -> str:
    """The server setting of a run: its parameters other than the load (of ``varying`` when given)."""
    shown = [(k, v) for k, v in params.items() if k != load and (varying is None or k in varying)]
    return ", ".join(f"{k}={v}" for k, v in shown) or "all"


def _split(runs: Sequence[RunRecord], load: str | None) -> tuple[list[str], str]:
    """The parameters (other than the load) that vary between the runs, and ``k=v, …`` of those that do not."""
    names = list(dict.fromkeys(k for r in runs for k in r.params if k != load))
    varying = [k for k in names if len({repr(r.params.get(k)) for r in runs}) > 1]
    fixed = ", ".join(f"{k}={runs[0].params[k]}" for k in names if k not in varying and k in runs[0].params)
    return varying, fixed


def _layout(figure: Any, title: str, fixed: str, traces: int) -> None:
    """Title, the fixed parameters as its subtitle, and a legend below the plot (only with several traces)."""
    figure.update_layout(title={"text": title, **({"subtitle": {"text": fixed}} if fixed else {})},
                         showlegend=traces > 1, margin={"t": 80 if fixed else 60, "b": 110 if traces > 1 else 60},
                         legend={"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0,
                                 "yanchor": "bottom"})


def _curves(runs: Sequence[RunRecord], load: str | None, metrics: Sequence[str]) -> dict[str, list[tuple]]:
    """Per server setting (named by what varies): (load value, {metric: median over the trial's
    succeeded runs}) sorted by load."""
    trials: dict[tuple[str, object], dict[str, list[float]]] = {}
    varying, _ = _split(runs, load)
    for r in runs:
        if r.warmup or r.status != "succeeded":
            continue
        key = (_setting(r.params, load, varying), r.params.get(load) if load else r.trial_id)
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


def _name(metric: str, setting: str, settings: int) -> str:
    """A trace's legend entry: the metric, and the server setting when there are several."""
    return f"{metric} · {setting}" if settings > 1 else metric


def latency_vs_load(runs: Sequence[RunRecord], load: str, bounds: dict[str, float]) -> Any:
    """Latency percentiles (median of the runs) against the load, with the SLO bounds dashed; the axis
    in the unit the values need (``ms``), on a log scale when they span more than a decade."""
    import plotly.graph_objects as go

    present = [m for m in LATENCIES if any(m in r.metrics for r in runs)]
    curves = _curves(runs, load, present)
    values = [v[m] for points in curves.values() for _, v in points for m in present if m in v]
    loads = [x for points in curves.values() for x, _ in points if isinstance(x, (int, float))]
    shown = {m: b for m, b in bounds.items() if any(p == m or p.startswith(f"{m}_") for p in present)}
    scale = axis_scale(values, "s")
    figure = go.Figure()
    for setting, points in curves.items():
        for metric in present:
            xs = [x for x, v in points if metric in v]
            figure.add_trace(go.Scatter(x=xs, y=[v[metric] * scale.factor for _, v in points if metric in v],
                                        mode="lines+markers", name=_name(metric, setting, len(curves))))
    for metric, bound in shown.items():  # a line of its own, named in the legend (an annotation on a log axis drifts)
        figure.add_trace(go.Scatter(x=[min(loads, default=0), max(loads, default=1)], y=[bound * scale.factor] * 2,
                                    mode="lines", line={"dash": "dash", "color": "red", "width": 1.5},
                                    name=f"SLO {metric} ≤ {si(bound, 's')}", hoverinfo="name"))
    known = [v for v in values if v > 0]
    log = bool(known) and max([*known, *shown.values()]) / min(known) > 10
    figure.update_layout(xaxis_title=load, yaxis_title=f"latency ({scale.unit}), median of runs",
                         yaxis={"type": "log", "dtick": 1} if log else {"rangemode": "tozero"})
    _layout(figure, f"latency vs {load}", _split(runs, load)[1], len(figure.data))
    return figure


def goodput_vs_load(runs: Sequence[RunRecord], load: str) -> Any:
    """Goodput and request throughput against the load."""
    import plotly.graph_objects as go

    figure = go.Figure()
    curves = _curves(runs, load, ("goodput", "request_throughput"))
    for setting, points in curves.items():
        for metric, dash in (("goodput", "solid"), ("request_throughput", "dot")):
            xs = [x for x, v in points if metric in v]
            if xs:
                figure.add_trace(go.Scatter(x=xs, y=[v[metric] for _, v in points if metric in v],
                                            mode="lines+markers", line={"dash": dash},
                                            name=_name(metric, setting, len(curves))))
    figure.update_layout(xaxis_title=load, yaxis_title="requests/s, median of runs")
    _layout(figure, f"goodput vs {load}", _split(runs, load)[1], len(figure.data))
    return figure


def frontier(runs: Sequence[RunRecord], load: str | None) -> Any:
    """System output tokens/s against tokens/s per user, one curve per server setting, and the
    frontier over all of them."""
    import plotly.graph_objects as go

    metrics = ("output_tokens_per_s", "output_tokens_per_s_per_user")
    figure = go.Figure()
    everything = []
    curves = _curves(runs, load, metrics)
    for setting, points in curves.items():
        pts = [(v[metrics[1]], v[metrics[0]], x) for x, v in points if all(m in v for m in metrics)]
        everything += pts
        figure.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                    text=[f"{load}={p[2]}" for p in pts] if load else None,
                                    name=setting if len(curves) > 1 else "measured"))
    best = pareto(everything)
    if best:
        figure.add_trace(go.Scatter(x=[p[0] for p in best], y=[p[1] for p in best], mode="lines",
                                    line={"dash": "dash", "color": "grey"}, name="frontier"))
    figure.update_layout(xaxis_title="output tokens/s per user", yaxis_title="system output tokens/s")
    _layout(figure, "throughput vs interactivity", _split(runs, load)[1], len(figure.data))
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
    from ..capacity.driver import answers, points_of
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


def capacity_lines(spec: dict, runs: Sequence[RunRecord]) -> list[str]:
    """The capacity search's answer for a terminal (``run``'s end and ``show``), a line per setting:
    ``capacity (highest rate with ttft_p99 ≤ 1): max_batch=8: 14.2 [13.1 … 15.0]; meets 13, fails 15``."""
    question, rows = capacity_rows(spec, runs)
    if not question:
        return []
    lines = [f"capacity: {question}"]
    for r in rows:
        estimate = si(r["estimate"]) if r["estimate"] is not None else "–"
        interval = f" [{si(r['ci'][0])} … {si(r['ci'][1])}]" if r["ci"] else ""
        bracket = ", ".join(part for part in (f"meets {si(r['meets'])}" if r["meets"] is not None else "",
                                              f"fails {si(r['fails'])}" if r["fails"] is not None else "") if part)
        lines.append(f"  {r['setting']}: {r['status']}, {estimate}{interval}" + (f"; {bracket}" if bracket else "")
                     + f" ({r['probes']} probes, {r['runs']} runs)")
    return lines + ["  each probe ran until its SLO question was decided (sequential) or its max runs"]


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
