"""Whether a Benchmark's spec loads and plans, with the loader's own message when it does not.

The spec (inline, or the files of its ConfigMap) is written to a temporary folder and loaded as
``kubebench run`` loads it, with ``spec.params`` as ``--set`` overrides, then planned: what the
runner would refuse is refused here, before any Job exists (``Accepted=False``).
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..attempts import dump_yaml
from ..errors import KubebenchError
from ..runner import plan_experiment
from ..settings import settings
from ..spec.load import load_spec
from .children import SPEC_KEY, experiment_id
from .resource import BenchmarkResourceSpec


@dataclass(frozen=True)
class Verdict:
    """The outcome of loading and planning the spec."""

    ok: bool
    reason: str
    message: str
    planned: int = 0
    spec: BenchmarkResourceSpec | None = None


def resource_spec(cr: dict) -> BenchmarkResourceSpec | Verdict:
    """The typed ``spec``, or a refusal naming the first problem."""
    try:
        return BenchmarkResourceSpec.model_validate(cr.get("spec") or {})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        return Verdict(False, "InvalidSpec", f"spec.{where}: {first['msg'].removeprefix('Value error, ')}"[:1024])


def check(cr: dict, files: dict[str, str] | None, source: str) -> Verdict:
    """Load and plan the Benchmark's spec: inline (``files`` None) or the ConfigMap's ``files``."""
    spec = resource_spec(cr)
    if isinstance(spec, Verdict):
        return spec
    namespace = cr["metadata"]["namespace"]
    with tempfile.TemporaryDirectory(prefix="kubebench-operator-") as folder:
        key = spec.benchmark_from.config_map_key_ref.key if spec.benchmark_from else SPEC_KEY
        for name, text in (files if files is not None else {SPEC_KEY: dump_yaml(cr["spec"]["benchmark"])}).items():
            (Path(folder) / name).write_text(text, encoding="utf-8")
        path = Path(folder) / key
        if not path.is_file():
            return Verdict(False, "SpecNotFound", f"{source}: no key {key!r} (it has: {', '.join(sorted(files or {}))})")
        try:
            return _planned(cr, spec, path, namespace)
        except KubebenchError as e:
            return Verdict(False, "InvalidSpec", _relabel(str(e), str(path), source, files is None)[:1024])


def _planned(cr: dict, spec: BenchmarkResourceSpec, path: Path, namespace: str) -> Verdict:
    loaded = load_spec(path)
    names = set(loaded.spec.parameters) | {k for point in loaded.spec.include for k in point}
    unknown = sorted(set(spec.params) - names)
    if unknown:
        return Verdict(False, "InvalidSpec", f"spec.params: {', '.join(unknown)} not a parameter of the spec; "
                                             f"parameters: {', '.join(sorted(names)) or 'none'}")
    overrides = tuple(f"{k}={json.dumps(v)}" for k, v in spec.params.items())
    loaded = load_spec(path, overrides=overrides)
    backend = loaded.spec.backend
    theirs = getattr(backend, "namespace", None) if backend.kind == "kubernetes" else None
    if theirs and theirs != namespace:
        return Verdict(False, "CrossNamespace", f"the spec's backend.namespace {theirs!r} is not the Benchmark's "
                                                f"({namespace!r}): owner references cannot cross namespaces")
    plan = plan_experiment(loaded, settings(home=tempfile.gettempdir()), experiment_id(cr, spec), labels=spec.labels).plan
    trials = len({run.trial.id for run in plan.runs})
    counted = [r for r in plan.runs if not r.warmup]
    warm = len(plan.runs) - len(counted)
    message = f"{trials} trial{'s' * (trials != 1)}, {len(counted)} run{'s' * (len(counted) != 1)}" + \
        (f" (+{warm} warm-up)" if warm else "")
    return Verdict(True, "SpecValid", message, len(counted), spec)


def _relabel(message: str, path: str, source: str, inline: bool) -> str:
    """The loader's message about the temporary file, told about the resource instead: an inline
    spec's lines are those of a re-dump, so they are left out."""
    pattern = re.escape(path) + (r"(:\d+:\d+)?" if inline else "")
    return re.sub(pattern, source, message)
