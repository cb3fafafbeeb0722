"""A rich progress bar fed by the runner's callbacks."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column

from ..plan.plan import Plan, Run
from ..store.records import RunResult
from .numbers import plural
from .text import cell, safe_line


class RichProgress:
    """Progress of an experiment: one bar over its runs with a count of failed ones, a line per failed run.

    The run's description gives way first on a narrow terminal (it is cut, the bar and counts stay).
    Repeats count from 0, as in the tables and the JSON.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")),
            BarColumn(bar_width=20), MofNCompleteColumn(), TextColumn("[red]{task.fields[failed]}"),
            TimeElapsedColumn(), console=console, transient=False, expand=True,
        )
        self.task: TaskID | None = None  # the bar's one task, from ``started`` on
        self.failed = 0

    def __enter__(self) -> "RichProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self.task is not None:
            self.bar.stop()

    def started(self, plan: Plan, skipped: int) -> None:
        """Size the bar; runs already done (resume) count as completed."""
        note = f" ({skipped} already done)" if skipped else ""
        self.console.print(cell(f"experiment {plan.experiment_id}: {plural(len(plan.trials), 'trial')}, "
                                f"{plural(len(plan.runs), 'run')}{note}"))
        self.task = self.bar.add_task("starting", total=len(plan.runs), completed=skipped, failed="")
        self.bar.start()  # only now: spec errors found before this print no empty bar

    def added(self, runs: int) -> None:
        """Adaptive repeats planned more runs."""
        self._update(total=(self.bar.tasks[0].total or 0) + runs)

    def run_started(self, run: Run) -> None:
        """Show which run is in flight."""
        self._update(description=_escape_markup(safe_line(run.label)))

    def run_finished(self, run: Run, result: RunResult) -> None:
        """Advance; say why a run failed."""
        if result.status != "succeeded":
            self.failed += 1
        self._update(advance=1, failed=f"✗ {self.failed}" if self.failed else "")
        if result.status != "succeeded":
            line = cell("✗ ", style="red")
            line.append(safe_line(f"{run.label}: {result.status}: {result.reason}"))
            self.console.print(line)

    def _update(self, **changes: Any) -> None:
        if self.task is not None:  # the runner calls ``started`` before any other callback
            self.bar.update(self.task, **changes)


def _escape_markup(text: str) -> str:
    """TextColumn reads its text as rich markup: a parameter value like ``[red]`` must stay text."""
    from rich.markup import escape

    return escape(text)
