"""Every limit kubebench puts on the size of what users and workloads give it, in one place.

A spec of a few hundred bytes can otherwise ask for gigabytes (YAML aliases, a sweep of 10^9
points, ``{{ 'x' * 10**10 }}``), and a workload can write a result.json that fills the store. Each
limit has a default chosen far above real use and can be changed with its environment variable,
read when it is used (so a server's limits are the ones of its own environment). ``docs/limits.md``
lists them; this table is the one definition every check imports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import KubebenchError


@dataclass(frozen=True)
class Limit:
    """A limit: its default and the environment variable that changes it."""

    name: str
    default: int
    env: str
    what: str

    def value(self) -> int:
        """The limit in force: the environment variable's whole number, else the default."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        try:
            number = int(raw.replace("_", ""))
        except ValueError:
            number = 0
        if number < 1:
            raise KubebenchError(f"{self.env}={raw!r}: expected a whole number >= 1 ({self.what})")
        return number


def _limit(name: str, default: int, what: str) -> Limit:
    return Limit(name, default, f"KUBEBENCH_MAX_{name.upper()}", what)


#: Bytes of a spec, parameter file or job template.
SPEC_BYTES = _limit("spec_bytes", 1_000_000, "bytes of a spec, parameter or template file")
#: Nesting of mappings and lists in a YAML document.
YAML_DEPTH = _limit("yaml_depth", 64, "levels of nested mappings and lists in YAML")
#: Values of a YAML document, counting each alias (``*name``) as all the values it repeats.
YAML_VALUES = _limit("yaml_values", 200_000, "values in a YAML document, aliases expanded")
#: Parameter points of a sweep (grid: the product of the lists' lengths, counted before ``exclude``).
SWEEP_POINTS = _limit("sweep_points", 10_000, "parameter points of a sweep")
#: Runs planned up front: points × (repeats + warm-up runs).
RUNS = _limit("runs", 100_000, "runs planned up front (points × (repeats + warm-up runs))")
#: Characters of a string (or items of a list) made while rendering a template, and of its output.
TEMPLATE_CHARS = _limit("template_chars", 1_000_000, "characters of a value made by a template")
#: Characters the templates of every trial of a plan make in all (what ``run``, ``run --dry-run``,
#: ``render``, ``doctor`` and the dashboard's launch keep): a spec of a few hundred bytes can ask for
#: 10,000 trials of 1,000,000 characters each.
RENDER_CHARS = _limit("render_chars", 64 * 1_048_576, "characters rendered by the templates of all the trials of a plan")
#: Seconds of rendering every trial of a plan (and of any one render).
RENDER_SECONDS = _limit("render_seconds", 30, "seconds to render every trial of a plan")
#: Bytes of memory a Jsonnet template's evaluation may use (in a child process of its own).
JSONNET_BYTES = _limit("jsonnet_bytes", 1_073_741_824, "bytes of memory of a Jsonnet evaluation")
#: Bytes of a run's result/result.json.
RESULT_BYTES = _limit("result_bytes", 1_048_576, "bytes of a run's result/result.json")
#: Metrics of one run, from every source (logs, post-processors, result.json).
METRICS = _limit("metrics", 1_000, "metrics of one run")
#: Characters of one info value (a non-numeric result.json field); longer ones are cut.
INFO_CHARS = _limit("info_chars", 4_096, "characters of one info value of a run")
#: Characters of a log line that the metric protocol and the mllog parser look at; a longer line
#: is read in pieces of this size, so memory stays bounded whatever a workload prints.
LOG_LINE_CHARS = _limit("log_line_chars", 1_048_576, "characters of a log line read at once")
#: Bytes of output/step_times.json.
STEP_FILE_BYTES = _limit("step_file_bytes", 64 * 1_048_576, "bytes of output/step_times.json")
#: Bytes of a serving run's file in output/: a load tool's result file or one requests file.
SERVING_FILE_BYTES = _limit("serving_file_bytes", 1_073_741_824,
                            "bytes of a load tool's result file or of one requests file in output/")
#: Bytes of one line of a streamed answer that the load generator reads (an SSE ``data:`` line).
ANSWER_LINE_BYTES = _limit("answer_line_bytes", 1_048_576, "bytes of one line of a server's streamed answer")
#: Bytes of one streamed answer that the load generator reads before it gives the request up.
ANSWER_BYTES = _limit("answer_bytes", 64 * 1_048_576, "bytes of one streamed answer of a server")
#: Bytes of one scrape of the server's ``/metrics`` by the load generator; a larger one ends scraping.
SCRAPE_BYTES = _limit("scrape_bytes", 16 * 1_048_576, "bytes of one scrape of a server's /metrics")
#: Bytes of the ``/metrics`` samples the load generator keeps (past it, every other one is dropped).
SCRAPES_BYTES = _limit("scrapes_bytes", 64 * 1_048_576, "bytes of the /metrics samples a load generator keeps")

ALL = (SPEC_BYTES, YAML_DEPTH, YAML_VALUES, SWEEP_POINTS, RUNS, TEMPLATE_CHARS, RENDER_CHARS, RENDER_SECONDS, JSONNET_BYTES,
       RESULT_BYTES,
       METRICS, INFO_CHARS, LOG_LINE_CHARS, STEP_FILE_BYTES, SERVING_FILE_BYTES,
       ANSWER_LINE_BYTES, ANSWER_BYTES, SCRAPE_BYTES, SCRAPES_BYTES)
