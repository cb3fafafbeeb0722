"""A rich progress bar fed by the runner's callbacks."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column

from ..plan.plan import Plan, Run
from ..store.records import RunResult
from .numbers import plural
from .text import cell, safe_line


class RichProgress:
    """Progress of an experiment: one bar over its runs with a count of failed ones, the time spent and
    the time left, a line per failed run (with the last line of its log).

    A run is described by what tells its trial from the others (the swept parameters, not the fixed
    ones) and its repeat; the description gives way first on a narrow terminal (it is cut, the bar
    and counts stay). Repeats count from 0, as in the tables and the JSON.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")),
            BarColumn(bar_width=20), MofNCompleteColumn(), TextColumn("[red]{task.fields[failed]}"),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False, expand=True,
        )
        self.task: TaskID | None = None  # the bar's one task, from ``started`` on
        self.failed = 0
        self.swept: list[str] | None = None  # the parameters that tell the plan's trials apart

    def __enter__(self) -> "RichProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self.task is not None:
            self.bar.stop()

    def started(self, plan: Plan, skipped: int) -> None:
        """Size the bar; runs already done (resume) count as completed."""
        from .tables import params_split

        self.swept = params_split([t.params for t in plan.trials])[1]
        note = f" ({skipped} already done)" if skipped else ""
        self.console.print(cell(f"experiment {plan.experiment_id}: {plural(len(plan.trials), 'trial')}, "
                                f"{plural(len(plan.runs), 'run')}{note}"))
        self.task = self.bar.add_task("starting", total=len(plan.runs), completed=skipped, failed="")
        self.bar.start()  # only now: spec errors found before this print no empty bar

    def added(self, runs: int) -> None:
        """Adaptive repeats planned more runs."""
        self._update(total=(self.bar.tasks[0].total or 0) + runs)

    def describe(self, run: Run) -> str:
        """``target_qps=400 (repeat 1)``: the run's swept parameters and its repeat."""
        from .tables import label

        kind = f"warm-up {run.repeat}" if run.warmup else f"repeat {run.repeat}"
        trial = label(run.trial.params, self.swept) if self.swept else ""
        return f"{trial} ({kind})" if trial else kind

    def run_started(self, run: Run) -> None:
        """Show which run is in flight."""
        self._update(description=_escape_markup(safe_line(self.describe(run))))

    def run_finished(self, run: Run, result: RunResult) -> None:
        """Advance; say why a run failed, with the last line of its log (where the cause usually is)."""
        if result.status != "succeeded":
            self.failed += 1
        self._update(advance=1, failed=f"✗ {self.failed}" if self.failed else "")
        if result.status != "succeeded":
            from .tables import last_line

            line = cell("✗ ", style="red")
            line.append(safe_line(f"{self.describe(run)}: {result.status}: {result.reason}"))
            tail = last_line(result.log_tail) if result.status != "cancelled" else ""
            if tail and tail not in result.reason:
                line.append_text(cell(f"\n  │ {tail}", style="dim"))
            self.console.print(line)

    def _update(self, **changes: Any) -> None:
        if self.task is not None:  # the runner calls ``started`` before any other callback
            self.bar.update(self.task, **changes)


def _escape_markup(text: str) -> str:
    """TextColumn reads its text as rich markup: a parameter value like ``[red]`` must stay text."""
    from rich.markup import escape

    return escape(text)
