"""Pure statistics over run results: summaries, comparisons, steady state, scaling and overhead.

Nothing here does I/O or touches the store; every function takes plain sequences of numbers and
returns frozen dataclasses. Every random step (bootstrap) takes an explicit ``seed`` so that
the same inputs always give the same output.

- :mod:`kubebench.numerics.stats`: :func:`summarize` one metric's repeats (mean, median, CI, …).
- :mod:`kubebench.analyse.decision`: :func:`~kubebench.analyse.decision.decide`, the one rule every verdict
  comes from (verdict, CI of the ratio, p).
- :mod:`kubebench.analyse.compare`: base vs candidate verdicts and ``--fail-on`` rules.
- :mod:`kubebench.numerics.steady`: warm-up and drift detection in a per-step series (MSER-5).
- :mod:`kubebench.analyse.studies`: scaling efficiency and platform overhead.
"""
