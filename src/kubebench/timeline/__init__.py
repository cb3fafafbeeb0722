"""A run's timeline: the moments it went through (:mod:`.boundary`), each with where the time came
from and how fine it is, and the phases between them (:mod:`.phases`), which become run metrics.

Pure and import-light: the backends build timelines, the runner turns them into metrics, the store
keeps them, the analyses and presenters read them.
"""

from .boundary import BOUNDARIES, Boundary, Source, best, chosen
from .lanes import COLOURS, Lane, Segment, lanes
from .phases import CHAIN, PHASE_METRICS, edges, phases, workload_window

__all__ = ["BOUNDARIES", "CHAIN", "COLOURS", "PHASE_METRICS", "Boundary", "Lane", "Segment", "Source", "best",
           "chosen", "edges", "lanes", "phases", "workload_window"]
