"""A rich progress bar fed by the runner's callbacks."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column

from ..plan.plan import Plan, Run
from ..store.records import RunResult
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
        self.task = None
        self.failed = 0

    def __enter__(self) -> "RichProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self.task is not None:
            self.bar.stop()

    def started(self, plan: Plan, skipped: int) -> None:
        """Size the bar; runs already done (resume) count as completed."""
        note = f" ({skipped} already done)" if skipped else ""
        self.console.print(cell(f"experiment {plan.experiment_id}: {len(plan.trials)} trials, "
                                f"{len(plan.runs)} runs{note}"))
        self.task = self.bar.add_task("starting", total=len(plan.runs), completed=skipped, failed="")
        self.bar.start()  # only now: spec errors found before this print no empty bar

    def added(self, runs: int) -> None:
        """Adaptive repeats planned more runs."""
        self.bar.update(self.task, total=self.bar.tasks[0].total + runs)

    def run_started(self, run: Run) -> None:
        """Show which run is in flight."""
        self.bar.update(self.task, description=_escape_markup(safe_line(run.label)))

    def run_finished(self, run: Run, result: RunResult) -> None:
        """Advance; say why a run failed."""
        if result.status != "succeeded":
            self.failed += 1
        self.bar.update(self.task, advance=1, failed=f"✗ {self.failed}" if self.failed else "")
        if result.status != "succeeded":
            line = cell("✗ ", style="red")
            line.append(safe_line(f"{run.label}: {result.status}: {result.reason}"))
            self.console.print(line)


def _escape_markup(text: str) -> str:
    """TextColumn reads its text as rich markup: a parameter value like ``[red]`` must stay text."""
    from rich.markup import escape

    return escape(text)
