"""``kubebench history NAME`` (the series of a benchmark with its change points) and ``history accept``."""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime
from enum import Enum
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from . import StoreOpt, app, expected_errors, make_console, open_store_of


class _ShowByDefault(TyperGroup):
    """``kubebench history NAME …`` is ``kubebench history show NAME …``; ``accept`` is a subcommand."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


history_app = typer.Typer(cls=_ShowByDefault, no_args_is_help=True, rich_markup_mode=None,
                          help="A benchmark's series: medians per experiment, change points, accepted changes.")
app.add_typer(history_app, name="history")


class HistoryFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


NameArg = Annotated[str, typer.Argument(help="Series (a spec's name or `series:`), or an experiment id of it.",
                                        show_default=False)]
TrialOpt = Annotated[Optional[list[str]], typer.Option("--trial", help="Only trials with this parameter: key=value; repeatable.")]

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """``7d``, ``12h``, ``2w`` (ago) or a date/time ``2026-11-01[T12:00]`` → a UNIX time."""
    from ..errors import SpecError

    match = _AGO.match(text.strip())
    if match:
        return (now if now is not None else time.time()) - float(match[1]) * _UNIT[match[2]]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise SpecError(f"invalid --since {text!r}: give a time ago (7d, 12h, 2w) or a date (2026-11-01)") from None


def open_source(store: Optional[str]):
    """The series source of the store named by ``--store`` (sqlite3 where it can)."""
    from ..settings import settings
    from ..store.series_reader import open_series

    return open_series(settings(store).store_url)


@history_app.command("show")
@expected_errors
def show(
    name: NameArg,
    metric: Annotated[Optional[str], typer.Option("--metric", help="Metric (default: the primary one).")] = None,
    trial: TrialOpt = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only experiments since: 30d, 12h, 2w or a date.")] = None,
    format: Annotated[HistoryFormat, typer.Option("--format", "-f")] = HistoryFormat.table,
    last: Annotated[int, typer.Option("--last", min=0, help="Also a table of each trial's last N points (JSON and CSV have all).")] = 0,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", metavar="KEY=VALUE",
        help="Only experiments with this label (one cluster of a series run on several: cluster=a); repeatable.")] = None,
    store: StoreOpt = None,
) -> None:
    """Per trial: the series of medians with CIs, and the change points with magnitude, direction and labels."""
    from ..analyse.history import load_history, parse_trials  # here: every CLI start imports this module
    from ..store.series_records import parse_labels

    series, _, found = load_history(open_source(store), name, metric, parse_trials(trial),
                                    parse_since(since) if since else None, parse_labels(label or ()))
    if format is HistoryFormat.json:
        from pydantic_core import to_json  # several times faster than json.dumps on 10,000 points

        from ..present.history import history_dict

        sys.stdout.write(to_json({"series": series, "trials": [history_dict(h) for h in found]}, indent=2,
                                 inf_nan_mode="null").decode() + "\n")
    elif format is HistoryFormat.csv:
        from ..present.history import history_csv

        sys.stdout.write(history_csv(found))
    else:
        from ..present.history import history_tables

        console = make_console()
        for item in history_tables(found, series, last):
            console.print(item)


@history_app.command("accept")
@expected_errors
def accept(
    name: NameArg,
    at: Annotated[str, typer.Option("--at", help="Experiment where the intended change starts.", show_default=False)],
    note: Annotated[str, typer.Option("--note", help="Why the level changed (shown with the change).")] = "",
    metric: Annotated[Optional[str], typer.Option("--metric", help="Only this metric (default: every metric).")] = None,
    store: StoreOpt = None,
) -> None:
    """Mark a step change as intended: later detections and `check` measure against the new level."""
    from ..store.series import accept_change, resolve_series

    db = open_store_of(store)
    series = resolve_series(db, name)
    accept_change(db, series, at, metric or "", note)
    make_console().print(f"accepted the change of series {series} at {at}" + (f" ({metric})" if metric else "")
                         + (f": {note}" if note else ""))


def history_sections(db, records, metric: Optional[str]) -> list:
    """``kubebench report``'s history sections: one per series (of more than one experiment) of ``records``."""
    from ..analyse.history import load_history
    from ..present.history import history_section
    from ..store.series_reader import StoreSeries

    source, sections, seen = StoreSeries(db), [], set()
    for record in records:
        series = record.series or record.name
        if series in seen:
            continue
        seen.add(series)
        if len(source.read_series(series).experiments) < 2:
            continue
        _, _, found = load_history(source, series, metric, {}, None)
        sections.append(history_section(found, series))
    return sections
