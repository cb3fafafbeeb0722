"""The capacity search of serving benchmarks: the highest load at which an SLO holds, found by
bisection over runs (:mod:`.search` decides the next probe from the runs so far, :mod:`.driver` turns
probes into the plan's runs)."""
