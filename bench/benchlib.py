"""What the bench scripts share: CPU pinning, the machine's state, the statistics of paired rounds, and
the virtual environments of the peers they compare against.

Every figure of the harness is a ratio of two arms measured in the same run, alternated round by
round, so that a machine that gets busier or quieter during the run hits both arms alike. The
rounds are paired: each round's ratio compares neighbours in time, and the figure is the median of
the rounds' ratios with a bootstrap confidence interval of that median.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BOOTSTRAP_RESAMPLES = 5000


def pin(cpus: str) -> list[int]:
    """Pin this process, and so every process it starts (children inherit the mask), to ``cpus``
    ("1", "0,1", "last" for the highest CPU this process may use, "" or "none" for no pinning).
    Returns the CPUs it may use now.

    Pinning both arms to one core keeps the scheduler from moving the workload between cores (cold
    caches) and makes the arms compete for the same core, so that the harness's own threads (the
    runner's wait loop, the telemetry sampler) are charged to kubebench, never hidden on an idle core.
    """
    if not hasattr(os, "sched_setaffinity"):
        return sorted(range(os.cpu_count() or 1))
    if cpus not in ("", "none"):
        allowed = sorted(os.sched_getaffinity(0))
        wanted = {allowed[-1]} if cpus == "last" else {int(c) for c in cpus.split(",")}
        os.sched_setaffinity(0, wanted)
    return sorted(os.sched_getaffinity(0))


def machine_line(pinned: list[int]) -> str:
    """One line: CPU model, CPUs, pinning, Python, and the load average now."""
    model = _cpu_model() or platform.processor() or platform.machine()
    return (f"machine: {model}, {os.cpu_count()} CPUs, pinned to CPU {','.join(map(str, pinned))}; "
            f"Python {platform.python_version()}; {load_line()}")


def load_line() -> str:
    """The load averages (1, 5, 15 min): how busy the machine was, for reading the figures."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


@dataclass(frozen=True)
class PairedRatio:
    """Median of per-round ratios, its bootstrap CI, and the geometric-mean ratio with a t CI."""

    median: float
    ci: tuple[float, float]
    geomean: float
    geomean_ci: tuple[float, float]
    rounds: int

    def text(self, digits: int = 3) -> str:
        """``0.998 [0.991, 1.004]``: the median and its 95% CI."""
        low, high = self.ci
        return f"{self.median:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float], confidence: float = 0.95,
                 seed: int = 0) -> PairedRatio:
    """The rounds' ratios numerator[i] / denominator[i], summarised two ways.

    The median with a percentile-bootstrap CI (rounds resampled with replacement) is robust to a
    round hit by a burst of load; the geometric mean with a t interval of the mean log ratio is the
    classic paired estimate. With fewer than 2 rounds the CIs are nan.
    """
    ratios = np.asarray(numerator, dtype=float) / np.asarray(denominator, dtype=float)
    n = ratios.size
    median = float(np.median(ratios))
    logs = np.log(ratios)
    geomean = float(np.exp(logs.mean()))
    if n < 2:
        nan = (math.nan, math.nan)
        return PairedRatio(median, nan, geomean, nan, n)
    rng = np.random.default_rng(seed)
    medians = np.median(ratios[rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))], axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(medians, [tail, 1 - tail])
    from scipy import stats

    half = stats.t.ppf(1 - tail, n - 1) * logs.std(ddof=1) / math.sqrt(n)
    return PairedRatio(median, (float(low), float(high)), geomean,
                       (float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half))), n)


def spread(values: Sequence[float]) -> str:
    """``min–max (CV x%)`` of one arm's values over the rounds: how noisy the machine was."""
    cv = 100 * statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0
    return f"{min(values):,.1f}–{max(values):,.1f} (CV {cv:.1f}%)"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def pinned_venv(folder: Path, packages: Sequence[str]) -> Path:
    """The Python of a virtual environment at ``folder`` with ``packages`` (pinned), made once; made
    again when the pins change."""
    python, marker = folder / "bin" / "python", folder / ".installed"
    if marker.exists() and marker.read_text() == " ".join(packages):
        return python
    print(f"making {folder} ({', '.join(packages)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    marker.write_text(" ".join(packages))
    return python
