"""A rich progress bar fed by the runner's callbacks."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..plan.plan import Plan, Run
from ..store.records import RunResult


class RichProgress:
    """Progress of an experiment: one bar over its runs, a line per failed run."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=False,
        )
        self.task = None

    def __enter__(self) -> "RichProgress":
        return self

    def __exit__(self, *exc) -> None:
        if self.task is not None:
            self.bar.stop()

    def started(self, plan: Plan, skipped: int) -> None:
        """Size the bar; runs already done (resume) count as completed."""
        note = f" ({skipped} already done)" if skipped else ""
        self.console.print(f"experiment [bold]{plan.experiment_id}[/]: {len(plan.trials)} trials, "
                           f"{len(plan.runs)} runs{note}")
        self.task = self.bar.add_task("starting", total=len(plan.runs), completed=skipped)
        self.bar.start()  # only now: spec errors found before this print no empty bar

    def added(self, runs: int) -> None:
        """Adaptive repeats planned more runs."""
        self.bar.update(self.task, total=self.bar.tasks[0].total + runs)

    def run_started(self, run: Run) -> None:
        """Show which run is in flight."""
        self.bar.update(self.task, description=run.label)

    def run_finished(self, run: Run, result: RunResult) -> None:
        """Advance; say why a run failed."""
        self.bar.advance(self.task)
        if result.status != "succeeded":
            self.console.print(f"[red]✗[/] {run.label}: {result.status}: {result.reason}")
