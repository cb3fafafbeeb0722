"""The ground floor of the numbers: pure statistics that every layer may use (plan's adaptive repeats,
collect's steady state, the capacity search, analyse, present) and that import nothing of kubebench
but its errors and its rules (:mod:`kubebench.rules`, import-free).

- :mod:`kubebench.numerics.stats`: :func:`~kubebench.numerics.stats.summarize` one metric's repeats
  (mean, median, CI, …), the t distribution, the bootstrap of a median ratio.
- :mod:`kubebench.numerics.twosample`: the two-sample test behind every verdict (Yuen's trimmed Welch t-test
  on log values), t quantiles at fractional degrees of freedom, the change n runs can detect.
- :mod:`kubebench.numerics.steady`: warm-up and drift detection in a per-step series (MSER-5).
- :mod:`kubebench.numerics.sequential`: sequential decisions (group-sequential repeated confidence
  intervals): ``run --decide-against``, adaptive repeats' stopping, the capacity search's probes.
"""
