"""Plugins by name: built-ins plus the ``kubebench.<group>`` entry-point groups.

A plugin is referenced as ``"module:attribute"`` so that looking up names never imports heavy
modules; the object is imported only when it is used.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from .errors import PluginError

_BUILTINS: dict[str, dict[str, str]] = {
    "backends": {
        "local": "kubebench.backends.local:LocalBackend",
        "kubernetes": "kubebench.backends.kube.backend:KubernetesBackend",
    },
    "postprocessors": {
        "regex": "kubebench.collect.postprocess:RegexPostprocessor",
        "command": "kubebench.collect.postprocess:CommandPostprocessor",
        "python": "kubebench.collect.postprocess:PythonPostprocessor",
        "mllog": "kubebench.collect.mllog:MllogPostprocessor",
        # serving: merged load-generator records, and other load tools' result files
        "llm-requests": "kubebench.collect.serving:RequestsPostprocessor",
        "vllm-bench": "kubebench.collect.serving:VllmBenchPostprocessor",
        "guidellm": "kubebench.collect.serving:GuidellmPostprocessor",
        "inference-perf": "kubebench.collect.serving:InferencePerfPostprocessor",
        "aiperf": "kubebench.collect.serving:AiperfPostprocessor",
    },
    "reporters": {
        "pushgateway": "kubebench.monitor.pushgateway:PushgatewayReporter",
    },
}


@cache
def names(group: str) -> dict[str, str]:
    """Map every plugin name of ``group`` to its ``module:attribute`` reference."""
    found = dict(_BUILTINS.get(group, {}))
    for ep in _entry_points().select(group=f"kubebench.{group}"):
        found.setdefault(ep.name, ep.value)
    return found


@cache
def _entry_points() -> Any:
    # Every call of entry_points() reads the metadata of every installed distribution; loading a
    # spec asks for three groups, so read them once (~10 ms each with 170 distributions). Python
    # 3.12 returns EntryPoints, 3.11 SelectableGroups: both have select(group=…).
    return entry_points()


def load(group: str, name: str) -> Any:
    """Import and return the plugin ``name`` of ``group``; unknown names list the valid ones."""
    known = names(group)
    if name not in known:
        valid = ", ".join(sorted(known))
        raise PluginError(f"unknown {group[:-1]} {name!r}; valid: {valid}")
    module_name, _, attribute = known[name].partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as e:
        raise PluginError(f"{group[:-1]} {name!r} ({known[name]}) failed to load: {e}") from e
