"""Reporters: plugins (registry group ``reporters``) that send each finished run's results somewhere.

A reporter that fails does not fail the run: its error is a warning in the run's info.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from .. import registry
from ..spec.base import PluginConfig

if TYPE_CHECKING:
    from ..collect.context import RunContext
    from ..store.records import RunResult


class Reporter(ABC):
    """Sends one finished run somewhere; configured by its ``Config`` (``report: [{kind: …}]``)."""

    Config: ClassVar[type[PluginConfig]]

    def __init__(self, config: PluginConfig) -> None:
        self.config = config

    @abstractmethod
    def report(self, ctx: RunContext, result: RunResult) -> None:
        """Send the run's result; raise on failure (the runner records it as a warning)."""


def report_run(configs: Sequence[PluginConfig], ctx: RunContext, result: RunResult) -> RunResult:
    """Call every reporter on the run; ``result`` with ``report_warning_<kind>`` info for those that failed."""
    warnings: dict[str, str] = {}
    for config in configs:
        try:
            registry.load("reporters", config.kind)(config).report(ctx, result)
        except Exception as e:  # a failure is data: the run's numbers still count
            warnings[f"report_warning_{config.kind}"] = f"{type(e).__name__}: {e}"
    return result.model_copy(update={"info": {**result.info, **warnings}}) if warnings else result
