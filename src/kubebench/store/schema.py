"""SQL tables of the store at its newest schema, ``SCHEMA_VERSION`` (see :mod:`.version`)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

meta = Table(
    "kubebench_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
)

experiments = Table(
    "experiments",
    metadata,
    Column("id", String(80), primary_key=True),
    Column("name", String(128), nullable=False, index=True),
    Column("backend", String(64), nullable=False),
    Column("source", Text, nullable=False),
    Column("spec_text", Text, nullable=False),
    Column("job_fingerprint", String(32), nullable=False),
    Column("created_at", Float, nullable=False, index=True),
    Column("updated_at", Float, nullable=False),
    # derived from the states of its counted runs whenever they change (store.listing): the
    # dashboard filters and counts 10,000s of experiments by state without reading their runs
    Column("state", String(16), nullable=False, server_default="pending"),
    Index("ix_experiments_state_created_at", "state", "created_at"),
    # covers the listing's filters and its newest-first order: pages and counts read no table rows
    Index("ix_experiments_listing", "created_at", "id", "name", "backend", "state"),
    # schema 7 (kubebench.store.series): the series it belongs to (the spec's `series:` or its name)
    # and the labels given at run time (`--label version=1.4.2`); a series is read in time order
    Column("series", String(128), nullable=False, server_default=""),
    Column("labels", JSON, nullable=False, server_default="{}"),
    Index("ix_experiments_series_created_at", "series", "created_at"),
    # schema 8 (kubebench.data): seconds spent on its input data before its runs (all its starts)
    Column("data_prepare_seconds", Float),
)

trials = Table(
    "trials",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("index", Integer, nullable=False),
    Column("params", JSON, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False),
    Column("trial_id", String(32), ForeignKey("trials.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("repeat", Integer, nullable=False),
    Column("warmup", Boolean, nullable=False, default=False),
    Column("status", String(16), nullable=False),
    Column("exit_code", Integer),
    Column("reason", Text, nullable=False, default=""),
    Column("log_tail", Text, nullable=False, default=""),
    Column("info", JSON, nullable=False, default=dict),
    Column("attempts", Integer, nullable=False, default=0),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("path", Text, nullable=False, default=""),
    Column("provenance_id", String(32), ForeignKey("provenance.id"), index=True),
    # the run's metrics as one JSON object: a copy of its rows in `metrics`, written in the same
    # transaction, so that reading 10,000 runs parses 10,000 objects instead of 100,000 rows
    Column("metric_values", JSON),
    # covers the run counts by status, which statuses an experiment's runs have (read whenever a run
    # is recorded) and the ids of its runs in one status: no table lookups, so the planner prefers
    # it to a scan whatever its statistics say (schema version 6; see store.listing)
    Index("ix_runs_experiment_status_warmup_id", "experiment_id", "status", "warmup", "id"),
)

provenance = Table(
    "provenance",
    metadata,
    # a hash of ``data``: the runs of one environment share one row
    Column("id", String(32), primary_key=True),
    Column("data", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
)

metrics = Table(
    "metrics",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("value", Float, nullable=False),
)

# one row per attempt of a run that ended, or that a resumed runner found interrupted: what retries
# and resumes did, while `runs` holds how the last attempt ended (schema version 4)
run_attempts = Table(
    "run_attempts",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("attempt", Integer, primary_key=True),
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("exit_code", Integer),
    Column("started_at", Float),
    Column("finished_at", Float),
)

# one row per sample of one series of a run (kubebench.monitor): CPU, memory, GPU … over time
telemetry = Table(
    "telemetry",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("series", String(128), nullable=False),
    Column("t", Float, nullable=False),
    Column("value", Float, nullable=False),
)

# schema 9 (kubebench.timeline): one row per reading of a moment of a run (submitted, scheduled,
# pulled, started, the workload's marks, exited …), with where its time came from and how fine it is
run_timeline = Table(
    "run_timeline",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("name", String(128), nullable=False),
    Column("replica", String(128), nullable=False),
    Column("t", Float, nullable=False),
    Column("source", String(16), nullable=False),
    Column("precision", Float, nullable=False),
    Column("origin", String(256), nullable=False),
)


# schema 7 (kubebench.store.series): step changes of a series accepted as intended (`kubebench
# history accept`); detections and gates measure against the level after them. metric "" = all.
series_changes = Table(
    "series_changes",
    metadata,
    Column("series", String(128), primary_key=True),
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True),
    Column("metric", String(128), primary_key=True),
    Column("note", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

# schema 7: a benchmark's own run-to-run noise, measured by A/A runs (`kubebench calibrate`), per trial
# (its parameters as canonical JSON) and metric: thresholds use it instead of the global default
noise_floors = Table(
    "noise_floors",
    metadata,
    Column("series", String(128), primary_key=True),
    Column("trial_key", String(1024), primary_key=True),
    Column("metric", String(128), primary_key=True),
    Column("spread", Float, nullable=False),
    Column("cv", Float, nullable=False),
    Column("experiments", JSON, nullable=False),
    Column("runs", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)

# schema 7: a note and tags a person adds to an experiment (the runs table of the dashboard)
experiment_notes = Table(
    "experiment_notes",
    metadata,
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True),
    Column("note", Text, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("updated_at", Float, nullable=False),
)


# schema 8 (kubebench.data): the datasets an experiment's trials read — each one's cache key and
# checksum (its identity), the trials reading it, and the time the experiment spent on it (waiting,
# checking, preparing: never a run's time); the experiments that used a key are found by it
experiment_data = Table(
    "experiment_data",
    metadata,
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(64), primary_key=True),
    Column("key", String(64), nullable=False),
    Column("checksum", String(96), nullable=False),
    Column("source", String(16), nullable=False),
    Column("origin", Text, nullable=False),
    Column("trials", JSON, nullable=False),
    Column("files", Integer, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("seconds", Float, nullable=False),
    Column("prepared", Boolean, nullable=False),
    Column("recorded_at", Float, nullable=False),
    Index("ix_experiment_data_key", "key"),
)


# schema 10 (kubebench.numerics.sequential): each trial's decision against the base `kubebench run
# --decide-against` named — its verdict, the runs it took, its intervals — stored as the trial is decided
trial_decisions = Table(
    "trial_decisions",
    metadata,
    Column("experiment_id", String(80), ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True),
    Column("trial_id", String(32), ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True),
    Column("metric", String(128), primary_key=True),
    Column("goal", String(16), nullable=False),
    Column("against", Text, nullable=False),
    Column("base_experiments", JSON, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("runs", Integer, nullable=False),
    Column("base_runs", Integer, nullable=False),
    Column("min_runs", Integer, nullable=False),
    Column("max_runs", Integer, nullable=False),
    Column("ratio", Float),
    Column("ci_low", Float),
    Column("ci_high", Float),
    Column("band_low", Float),
    Column("band_high", Float),
    Column("alpha", Float, nullable=False),
    Column("beta", Float, nullable=False),
    Column("margin", Float, nullable=False),
    Column("reason", Text, nullable=False),
    Column("sequential", Boolean, nullable=False),
    Column("decided_at", Float, nullable=False),
)


# schema 11 (kubebench.store.leases): who runs an experiment, for stores that runners on several machines
# share (PostgreSQL): the runner's random owner token, host and pid, and its heartbeat in the database's
# clock; a lease whose ``expires_at`` has passed belonged to a runner that died, and is taken over.
# No foreign key: a runner takes the lease before its experiment's first row is written.
experiment_leases = Table(
    "experiment_leases",
    metadata,
    Column("experiment_id", String(80), primary_key=True),
    Column("owner", String(32), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("acquired_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)
