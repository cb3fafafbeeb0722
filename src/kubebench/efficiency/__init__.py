"""What throughput costs: model FLOPs and MFU against a device peak table, and price per run.

Pure (no framework imports): :mod:`.flops` counts a decoder-only transformer's FLOPs from its
shape, :mod:`.peaks` holds the devices' peak FLOP/s, :mod:`.cost` prices a run from a user's table,
:mod:`.derived` turns a run's energy and price into per-item figures, :mod:`.goals` says which way
these metrics are better. Energy counters are read by :mod:`kubebench.monitor.energy`.
"""
