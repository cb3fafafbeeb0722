"""What throughput costs, measured where the job runs: model FLOPs and the devices' peaks, energy counters.

No framework imports and nothing of kubebench above its ground floor, so a job image needs none of the
runner's dependencies: :mod:`.flops` counts a decoder-only transformer's FLOPs from its shape,
:mod:`.peaks` holds the devices' dense peak FLOP/s, :mod:`.counters` reads this machine's energy
counters (NVML, RAPL). The runner side prices a run (:mod:`kubebench.collect.cost`) and adds energy per
item and cost to a finished run (:mod:`kubebench.accounting`); :mod:`kubebench.monitor.energy` adds
DCGM's counters for Kubernetes runs.
"""
