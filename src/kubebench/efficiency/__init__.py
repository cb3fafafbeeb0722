"""What throughput costs: model FLOPs and MFU against a device peak table, and the price of a run.

No framework imports: :mod:`.flops` counts a decoder-only transformer's FLOPs from its shape,
:mod:`.peaks` holds the devices' dense peak FLOP/s, :mod:`.cost` prices a run from the user's table
and turns energy and price into per-item figures, :mod:`.accounting` adds those to a finished run
(which way these metrics are better is :func:`kubebench.rules.default_goal`). :mod:`.counters` reads this
machine's energy counters (NVML, RAPL); :mod:`kubebench.monitor.energy` adds DCGM's for Kubernetes runs.
"""
