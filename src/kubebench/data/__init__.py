"""Input data as a step of the experiment: datasets fetched or made once per cache key, verified,
kept in the data root, and recorded with the runs that read them (see :mod:`.prepare`)."""

from .prepare import prepare_data

__all__ = ["prepare_data"]
