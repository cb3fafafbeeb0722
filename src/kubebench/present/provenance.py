"""Provenance as a few lines for ``kubebench show``: machine, software, workload."""

from __future__ import annotations

from typing import Any

from ..provenance import provenance_differences
from .numbers import plural


def environment_lines(environments: list[tuple[dict[str, Any], int]]) -> list[str]:
    """The environment of an experiment's runs; when runs ran in several, the others' differences."""
    if not environments:
        return ["environment: not recorded"]
    first, count = environments[0]
    lines = describe(first)
    if len(environments) > 1:
        total = sum(n for _, n in environments)
        lines.append(f"  runs ran in {len(environments)} environments ({count} of {total} in this one); "
                     "the others differ in:")
        for other, n in environments[1:]:
            lines.append(f"    {plural(n, 'run')}: " + "; ".join(provenance_differences(first, other)))
    return lines


def describe(p: dict[str, Any]) -> list[str]:
    """Three lines: the machine, the software, the workload and where it ran."""
    machine = [f"host {p.get('host', '?')}", p.get("os", "")]
    cpu = p.get("cpu_model", "")
    if p.get("cpu_cores") or p.get("cpu_threads"):
        cpu += f" ({p.get('cpu_cores', '?')} cores, {p.get('cpu_threads', '?')} threads)"
    machine += [cpu, f"{p['memory_gb']} GiB" if "memory_gb" in p else "", _gpus(p)]
    packages = p.get("packages") or {}
    software = [f"Python {p['python']}" if "python" in p else ""] + [f"{k} {v}" for k, v in packages.items()]
    workload = [f"backend {p.get('backend', '?')}", f"image {p['image']}" if "image" in p else "",
                f"node {p['node']}" if "node" in p else "", _git(p)]
    return ["environment: " + _join(machine), "  software: " + _join(software), "  workload: " + _join(workload)]


def _gpus(p: dict[str, Any]) -> str:
    gpus = p.get("gpus") or []
    if not gpus:
        return "no GPU"
    models: dict[str, int] = {}
    for gpu in gpus:
        models[gpu.get("model", "?")] = models.get(gpu.get("model", "?"), 0) + 1
    text = ", ".join(f"{n}× {model}" for model, n in models.items())
    return f"{text} (driver {p.get('gpu_driver', '?')}, CUDA {p.get('cuda', '?')})"


def _git(p: dict[str, Any]) -> str:
    if "git_commit" not in p:
        return "not in a git repository"
    return f"git {p['git_commit'][:12]}" + (" with uncommitted changes" if p.get("git_dirty") else "")


def _join(parts: list[str]) -> str:
    return " · ".join(part for part in parts if part)
