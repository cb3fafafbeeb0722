"""Golden ids: a fixed spec gives fixed job fingerprint, trial and run ids, across versions.

A store written by one version is resumed by the next only if planning the same spec under the
same experiment id gives the same ids (``kubebench run --id`` matches runs by id). So these values
are pinned, not recomputed with the code under test.

Migration note: if one of them ever must change (a new job field, another hash), do not just update
the values here. Either keep the old ids (a new job field goes into ``render.job._LATER_FIELDS``, so
it counts only when set), or add a store migration that rewrites the stored trial and run ids, and
say in the changelog that experiments planned before cannot be resumed otherwise.
"""

from __future__ import annotations

from pathlib import Path

from kubebench.plan.plan import digest, make_plan
from kubebench.render.job import job_fingerprint
from kubebench.spec.load import load_spec

EXP = "golden-202601010000-abcd"
SPEC = """\
apiVersion: kubebench/v1
kind: Benchmark
name: golden
job:
  command: [python, -c, "import kubebench; kubebench.report(v={{ batch }})"]
parameters:
  batch: [16, 32]
  lr: 0.1
repeats: 2
warmup_runs: 1
"""


def test_digest_of_known_parts() -> None:
    assert digest("a", 1, {"b": 2}) == "f04367be61ab"
    assert digest({"y": [1.5, None, True]}, length=20) == "6be02da46a612f3172d8"


def test_a_fixed_spec_gives_fixed_ids(tmp_path: Path) -> None:
    path = tmp_path / "benchmark.yaml"
    path.write_text(SPEC, encoding="utf-8")
    loaded = load_spec(path)
    fingerprint = job_fingerprint(loaded)
    plan = make_plan(loaded.spec, EXP, fingerprint)
    assert fingerprint == "7ef7bcf3841b"
    assert [(t.id, t.params) for t in plan.trials] == [
        ("ccfc43a63e", {"batch": 16, "lr": 0.1}),
        ("f1de3081f3", {"batch": 32, "lr": 0.1}),
    ]
    assert [(r.id, r.trial.params["batch"], r.repeat, r.warmup) for r in plan.runs] == [
        ("f3790b2388b2", 16, 0, True), ("8218d51db04b", 32, 0, True),  # warm-up round
        ("d726577627a9", 16, 0, False), ("eab313f39ca8", 32, 0, False),
        ("4bac4b1d9471", 16, 1, False), ("17d99da2e232", 32, 1, False),
    ]
