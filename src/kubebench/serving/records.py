"""Per-request records of a load generator, written to ``output/requests-<replica>.parquet`` (or
``.jsonl`` without pyarrow), so that every statistic can be recomputed and several replicas merged.

Times are seconds on the wall clock (epoch), taken from a monotonic clock anchored once at start, so
that records of replicas on one machine share a time axis; replicas on several machines are as
aligned as their clocks (NTP: milliseconds), which only matters for the throughput window.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import limits
from ..errors import PostprocessError
from ..output_files import read_output

#: Version of the records' format, kept in every file's metadata.
RECORDS_VERSION = 1
RECORDS_GLOB = "requests*"


@dataclass(frozen=True)
class RequestRecord:
    """One request: when it was due and sent, when each token came, what it produced, how it ended."""

    replica: int
    index: int
    #: When the schedule wanted it sent, and when it was sent (the gap is the client's lag).
    scheduled: float
    sent: float
    #: Arrival of each streamed chunk that carried text (the first one is the first token).
    token_times: tuple[float, ...]
    end: float
    input_tokens: int
    output_tokens: int
    #: ``usage`` (the server's count) or ``chunks`` (one token per streamed chunk).
    tokens_from: str
    #: ``ok``, or the kind of error: ``http_503``, ``timeout``, ``connection``, ``incomplete`` …
    status: str = "ok"
    #: Inside the measured window (not warm-up, not cool-down).
    measured: bool = True

    @property
    def ok(self) -> bool:
        """The request completed and streamed at least one token."""
        return self.status == "ok"

    @property
    def ttft(self) -> float | None:
        """Time to first token (seconds), or None without a token."""
        return self.token_times[0] - self.sent if self.token_times else None

    @property
    def e2e(self) -> float:
        """End-to-end latency (seconds)."""
        return self.end - self.sent

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first: (end − first token) / (tokens − 1), as vLLM defines it."""
        if not self.token_times or self.output_tokens < 2:
            return None
        return (self.end - self.token_times[0]) / (self.output_tokens - 1)

    def itls(self) -> list[float]:
        """Gaps between consecutive streamed chunks (inter-token latencies)."""
        t = self.token_times
        return [t[i + 1] - t[i] for i in range(len(t) - 1)]


@dataclass(frozen=True)
class RecordsFile:
    """The records of one load-generator replica and the window it measured."""

    records: tuple[RequestRecord, ...]
    #: Measured window (seconds on the wall clock): after warm-up, before cool-down.
    window: tuple[float, float]
    #: The load generator's own settings and self-validation, as written (JSON-able).
    meta: dict = field(default_factory=dict)


def write_records(path: Path, data: RecordsFile) -> Path:
    """Write ``path`` as Parquet when it ends in ``.parquet`` and pyarrow is installed, else as JSONL
    (first line: metadata); return the path written."""
    meta = {"version": RECORDS_VERSION, "window": list(data.window), **data.meta}
    if path.suffix == ".parquet":
        try:
            _write_parquet(path, data.records, meta)
            return path
        except ImportError:
            path = path.with_suffix(".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"meta": meta}) + "\n")
        for record in data.records:
            f.write(json.dumps(asdict(record)) + "\n")
    return path


def _write_parquet(path: Path, records: Sequence[RequestRecord], meta: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: [getattr(r, name) for r in records] for name in RequestRecord.__dataclass_fields__}
    columns["token_times"] = [list(t) for t in columns["token_times"]]
    types = {"replica": pa.int32(), "index": pa.int64(), "scheduled": pa.float64(), "sent": pa.float64(),
             "token_times": pa.list_(pa.float64()), "end": pa.float64(), "input_tokens": pa.int64(),
             "output_tokens": pa.int64(), "tokens_from": pa.string(), "status": pa.string(), "measured": pa.bool_()}
    table = pa.table({k: pa.array(v, types[k]) for k, v in columns.items()})
    pq.write_table(table.replace_schema_metadata({"kubebench.requests": json.dumps(meta)}), path)


def read_records(path: Path) -> RecordsFile:
    """Read one records file (Parquet or JSONL); a malformed one is a PostprocessError naming it."""
    try:
        if path.suffix == ".parquet":
            return _read_parquet(path)
        return _read_jsonl(path)
    except PostprocessError:
        raise
    except Exception as e:  # pyarrow's and json's many error types: one clear message
        raise PostprocessError(f"{path.name}: not a kubebench requests file: {type(e).__name__}: {e}") from e


def _read_parquet(path: Path) -> RecordsFile:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(read_output(path, limits.SERVING_FILE_BYTES)))
    meta = json.loads((table.schema.metadata or {}).get(b"kubebench.requests", b"{}"))
    rows = table.to_pylist()
    return _file([_record(row) for row in rows], meta, path)


def _read_jsonl(path: Path) -> RecordsFile:
    lines = read_output(path, limits.SERVING_FILE_BYTES).decode("utf-8").splitlines()
    if not lines:
        raise PostprocessError(f"{path.name}: empty requests file")
    meta = json.loads(lines[0]).get("meta") or {}
    return _file([_record(json.loads(line)) for line in lines[1:] if line.strip()], meta, path)


def _record(row: dict) -> RequestRecord:
    return RequestRecord(**{**row, "token_times": tuple(row["token_times"] or ())})


def _file(records: list[RequestRecord], meta: dict, path: Path) -> RecordsFile:
    if meta.get("version", 0) > RECORDS_VERSION:
        raise PostprocessError(f"{path.name}: records format {meta['version']} is newer than this kubebench reads")
    window = meta.get("window") or [0.0, 0.0]
    return RecordsFile(tuple(records), (float(window[0]), float(window[1])), meta)


def find_records(folder: Path) -> list[Path]:
    """The records files of every replica in ``folder`` (``requests*.parquet`` / ``.jsonl``), sorted."""
    return sorted(p for p in folder.glob(RECORDS_GLOB) if p.suffix in (".parquet", ".jsonl"))


def merge(files: Iterable[RecordsFile]) -> RecordsFile:
    """Records of several replicas as one run: all records, and the window every replica measured
    (the intersection), so that throughput counts the whole system over the same seconds."""
    files = list(files)
    if not files:
        raise PostprocessError("no requests files to merge")
    start = max(f.window[0] for f in files)
    end = min(f.window[1] for f in files)
    if end <= start:  # replicas that did not overlap: the union is the honest window
        start, end = min(f.window[0] for f in files), max(f.window[1] for f in files)
    records = tuple(r for f in files for r in f.records)
    return RecordsFile(records, (start, end), {"replicas": len(files), **{k: v for k, v in files[0].meta.items()
                                                                          if k not in ("window", "replica")}})
